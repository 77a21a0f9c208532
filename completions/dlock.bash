# bash completion for dlock(1)                           -*- shell-script -*-
#
# Installed as share/bash-completion/completions/dlock; to try it without
# installing: source completions/dlock.bash
#
# Written by hand. tests/e2e/completions_test.sh checks that every command
# and option of `dlock --help` is listed below: keep the lists in step.

_dlock_subcommands='run acquire renew release status list ping doctor config version'

# Global options may stand before or after the command.
_dlock_global_opts='-h --help --version -b --backend --namespace --config --password-file --connect-timeout -q --quiet -v --verbose'
_dlock_global_args='-b --backend --namespace --config --password-file --connect-timeout'

_dlock_opts_run='-h --help -c -t --ttl -w --wait --kill-after --lost-kill-after --max-runtime -E --conflict-exit-code --lost-exit-code --min-hold --if-unavailable --log --metrics-file --limit -s --shared -x --exclusive'
_dlock_opts_acquire='-h --help -t --ttl -w --wait -E --conflict-exit-code --limit -s --shared -x --exclusive --json'
_dlock_opts_renew='-h --help -t --ttl --json'
_dlock_opts_release='-h --help --force'
_dlock_opts_status='-h --help --json'
_dlock_opts_list='-h --help --json'
_dlock_opts_ping='-h --help --json'
_dlock_opts_doctor='-h --help -t --ttl --json'
_dlock_opts_config='-h --help --json'
_dlock_opts_version='-h --help'

# Options of any command that take a value.
_dlock_value_opts="$_dlock_global_args -c -t --ttl -w --wait --kill-after --lost-kill-after --max-runtime -E --conflict-exit-code --lost-exit-code --min-hold --if-unavailable --log --metrics-file --limit"

_dlock_backend_schemes='file: file:/// redis:// rediss:// redis+unix:// redis-sentinel:// redlock:// redlocks:// zk:// postgres:// postgresql:// etcd:// etcds://'

# True if $1 is one of the blank-separated words in $2.
_dlock_in_list() {
  [[ " $2 " == *" $1 "* ]]
}

# Durations, loosely: typed digits get each unit appended, else a few
# common values.
_dlock_durations() {
  local cur=$1 extra=$2
  if [[ $cur =~ ^[0-9]+(\.[0-9]*)?$ ]]; then
    printf '%s\n' "${cur}ms" "${cur}s" "${cur}m" "${cur}h"
  elif [[ $cur =~ ^[0-9.]+[hm][0-9]+$ ]]; then
    printf '%s\n' "${cur}m" "${cur}s"
  else
    compgen -W "250ms 1s 5s 10s 30s 1m 5m 10m 30m 1h 1h30m 2h $extra" -- "$cur"
  fi
}

# Names of held locks, from `dlock list --json` with the backend options
# already on the command line; quietly nothing if that is not quick.
_dlock_lock_names() {
  local dlock=$1 cur=$2
  shift 2
  command -v "$dlock" >/dev/null 2>&1 || return 0
  local -a run_list=("$dlock" "$@" list --json)
  command -v timeout >/dev/null 2>&1 && run_list=(timeout 1 "${run_list[@]}")
  "${run_list[@]}" 2>/dev/null </dev/null |
    sed -n 's/^ *"name": "\([^"]*\)".*/\1/p' |
    while IFS= read -r name; do
      [[ $name == "$cur"* ]] && printf '%s\n' "$name"
    done
}

_dlock() {
  COMPREPLY=()
  # Split the line on blanks only: bash's COMP_WORDS also splits on ':'
  # and '=', which would tear URLs and --opt=value apart.
  local line=${COMP_LINE:0:COMP_POINT}
  local -a words
  read -r -a words <<<"$line"
  [[ $line =~ [[:space:]]$ || ${#words[@]} -eq 0 ]] && words+=("")
  local cword=$((${#words[@]} - 1))
  local cur=${words[cword]} prev=""
  ((cword > 0)) && prev=${words[cword - 1]}

  # Find the command, the backend options to pass to `dlock list`, and
  # where run's COMMAND starts: after NAME, the first word that is not an
  # option of run or a global option (with or without `--` before it). The
  # word being completed counts: after NAME, a word that does not start
  # with `-` is COMMAND's.
  local sub="" i word dashdash=0 positionals=0 command_start=0
  local -a backend_args=()
  for ((i = 1; i <= cword; i++)); do
    word=${words[i]}
    if [[ -n $sub ]] && ((!dashdash && i < cword)) && [[ $word == -- ]]; then
      dashdash=1
      [[ $sub == run ]] || break
      continue
    fi
    # (A lone "-" being typed is the start of an option.)
    if [[ $sub == run ]] && ((positionals >= 1)) && { ((dashdash)) || { [[ $word != -?* ]] && { [[ $word != - ]] || ((i < cword)); }; }; }; then
      command_start=$i
      break
    fi
    ((i == cword)) && break
    if ((dashdash)); then
      ((positionals++))
      continue
    fi
    case $word in
    -b | --backend | --namespace | --config | --password-file)
      backend_args+=("$word" "${words[i + 1]}")
      ((i++))
      continue
      ;;
    --backend=* | --namespace=* | --config=* | --password-file=*)
      backend_args+=("$word")
      continue
      ;;
    esac
    if _dlock_in_list "$word" "$_dlock_value_opts"; then
      ((i++))
    elif [[ $word == -* ]]; then
      :
    elif [[ -z $sub ]] && _dlock_in_list "$word" "$_dlock_subcommands"; then
      sub=$word
    elif [[ -n $sub ]]; then
      ((positionals++))
    fi
  done

  # bash replaces only its own current word, which starts after the last
  # ':' or '='; candidates for the whole blank-delimited word must lose the
  # part before it.
  local bash_cur=${COMP_WORDS[COMP_CWORD]}
  [[ $bash_cur == [=:] ]] && bash_cur=""

  if ((command_start)); then
    # COMMAND [ARG...] of run: complete as a command line of its own. Its
    # first word in bash's COMP_WORDS, which splits at ':' and '=' too.
    local j=0 k=0 joined=""
    while ((k < command_start && j < COMP_CWORD)); do
      joined+=${COMP_WORDS[j]}
      ((j++))
      if [[ $joined == "${words[k]}" ]]; then
        joined=""
        ((k++))
      fi
    done
    if declare -F _command_offset >/dev/null && ((k == command_start)); then
      _command_offset "$j"
    elif ((cword == command_start)); then
      mapfile -t COMPREPLY < <(compgen -c -- "$bash_cur")
    else
      mapfile -t COMPREPLY < <(compgen -f -- "$bash_cur")
    fi
    return 0
  fi
  ((dashdash)) && return 0

  local option=$prev value=$cur
  if [[ $cur == --*=* ]]; then
    option=${cur%%=*}
    value=${cur#*=}
  fi
  local strip=${value%"$bash_cur"}

  local -a candidates=()
  local files=0
  case $option in
  -b | --backend)
    mapfile -t candidates < <(compgen -W "$_dlock_backend_schemes" -- "$value")
    if [[ $value == file://* ]]; then
      local dir
      while IFS= read -r dir; do
        candidates+=("file://$dir/")
      done < <(compgen -d -- "${value#file://}")
    elif [[ $value == redis+unix://* ]]; then
      # The socket's path; directories get a slash to go on typing.
      local path
      while IFS= read -r path; do
        [[ -d $path ]] && path+=/
        candidates+=("redis+unix://$path")
      done < <(compgen -f -- "${value#redis+unix://}")
    fi
    ;;
  --config | --password-file | --metrics-file)
    files=1
    ;;
  --log)
    mapfile -t candidates < <(compgen -W "stderr syslog journal" -- "$value"; compgen -f -- "$value")
    ;;
  --if-unavailable)
    mapfile -t candidates < <(compgen -W "fail run skip" -- "$value")
    ;;
  --namespace)
    candidates=(dlock)
    ;;
  -c)
    return 0
    ;;
  -t | --ttl | --kill-after | --lost-kill-after | --max-runtime | --min-hold | --connect-timeout)
    mapfile -t candidates < <(_dlock_durations "$value")
    ;;
  -w | --wait)
    mapfile -t candidates < <(_dlock_durations "$value" "0 forever")
    ;;
  -E | --conflict-exit-code | --lost-exit-code)
    mapfile -t candidates < <(compgen -W "0 1 75 76" -- "$value")
    ;;
  --limit)
    mapfile -t candidates < <(compgen -W "2 3 5 10" -- "$value")
    ;;
  *)
    if [[ $cur == -* ]]; then
      local sub_opts=""
      if [[ -n $sub ]]; then
        local sub_var=_dlock_opts_$sub
        sub_opts=${!sub_var}
      fi
      [[ $sub == run ]] && sub_opts+=" --"
      mapfile -t candidates < <(compgen -W "$_dlock_global_opts $sub_opts" -- "$cur" | sort -u)
    elif [[ -z $sub ]]; then
      mapfile -t candidates < <(compgen -W "$_dlock_subcommands" -- "$cur")
    else
      case $sub in
      run | status | renew | release | list)
        if ((positionals == 0)); then
          mapfile -t candidates < <(_dlock_lock_names "${words[0]}" "$cur" "${backend_args[@]}")
        fi
        ;;
      esac
    fi
    ;;
  esac

  if ((files)); then
    compopt -o filenames 2>/dev/null
    mapfile -t COMPREPLY < <(compgen -f -- "$value")
    return 0
  fi
  local candidate
  for candidate in "${candidates[@]}"; do
    [[ $candidate == "$strip"* ]] || continue
    candidate=${candidate#"$strip"}
    [[ -n $candidate ]] && COMPREPLY+=("$candidate")
  done
  # URLs and durations are often typed on: no space after "redis://".
  if ((${#COMPREPLY[@]} == 1)) && [[ ${COMPREPLY[0]} == *[:/] ]]; then
    compopt -o nospace 2>/dev/null
  fi
  return 0
}

complete -F _dlock dlock
