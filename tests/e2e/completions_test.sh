#!/usr/bin/env bash
# The hand-written shell completions offer every command and every option
# that `dlock --help` and `dlock COMMAND --help` list.
#
#   tests/e2e/completions_test.sh [DLOCK_BINARY]     (or DLOCK_BIN=...)
#   COMPLETIONS_DIR=/some/copy tests/e2e/completions_test.sh build/dlock
#
# bash and fish are asked what they would complete, as a user's TAB would:
# "dlock " for the commands, "dlock -", "dlock --", "dlock CMD -" and
# "dlock CMD --" for the options (global options must be offered after a
# command too). zsh completion cannot be driven without a terminal, so for
# zsh the option must appear in the _arguments specs of _dlock_CMD or in
# _dlock_global_specs, which every _dlock_CMD passes on. All three files must
# also load (bash: source; zsh -n; fish -n).
#
# To show that it can fail, the test then removes every line that mentions
# one option from a copy of each file and expects that option to be reported
# missing from each copy.
#
# Exit status: 0 all present, 1 something missing or broken, 64 usage.

set -uo pipefail

dlock=${1:-${DLOCK_BIN:-}}
if [[ -z $dlock ]]; then
  echo "usage: $0 DLOCK_BINARY   (or set DLOCK_BIN)" >&2
  exit 64
fi
if [[ ! -x $dlock ]]; then
  echo "completions: FAIL: $dlock is not an executable dlock binary" >&2
  exit 1
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
completions=${COMPLETIONS_DIR:-$here/../../completions}
files=(dlock.bash _dlock dlock.fish)

for shell in bash zsh fish; do
  if ! command -v "$shell" >/dev/null 2>&1; then
    echo "completions: FAIL: $shell is not installed; it is needed to check completions/" >&2
    exit 1
  fi
done

# What --help lists --------------------------------------------------------

# Subcommand names from the "Subcommands:" section of dlock --help.
help_subcommands() {
  "$dlock" --help | awk '/^Subcommands:/ { on = 1; next } on && /^[^ ]/ { on = 0 } on && NF { print $1 }'
}

# Options ("-t", "--ttl", "--json", "-c", ...) from the "Options:" section
# of dlock [COMMAND] --help.
help_options() {
  "$dlock" "$@" --help |
    awk '/^Options:/ { on = 1; next } /^[^ ]/ { on = 0 } on && $1 ~ /^-/ { print $1 }' |
    tr ',' '\n' | sed -n '/^-/p'
}

mapfile -t subcommands < <(help_subcommands)
mapfile -t global_options < <(help_options)
declare -A command_options
option_count=${#global_options[@]}
for sub in "${subcommands[@]}"; do
  command_options[$sub]=$(help_options "$sub" | tr '\n' ' ')
  for option in ${command_options[$sub]}; do
    ((option_count++))
  done
done
# Guard against a help format this parser no longer understands: the test
# must not pass by finding nothing to check.
if ((${#subcommands[@]} < 8 || ${#global_options[@]} < 10)); then
  echo "completions: FAIL: could not parse dlock --help (found ${#subcommands[@]} commands, ${#global_options[@]} global options)" >&2
  exit 1
fi
for sub in "${subcommands[@]}"; do
  if [[ -z ${command_options[$sub]// /} ]]; then
    echo "completions: FAIL: could not parse dlock $sub --help" >&2
    exit 1
  fi
done

# What each completion offers ----------------------------------------------

# The queries: the command line before the cursor, a trailing blank meaning
# an empty word is being completed.
queries=("dlock " "dlock -" "dlock --")
for sub in "${subcommands[@]}"; do
  queries+=("dlock $sub -" "dlock $sub --")
done
# Command words: run's options between NAME and COMMAND; after NAME a word
# that is not an option starts COMMAND, whose own options follow.
queries+=("dlock run x --" "dlock run -t 5s x ech" "dlock run x echo --")

# Runs every query against one completion file in one shell process and
# fills the global array `offered`: query -> candidates, one per line.
declare -A offered
collect() {
  local line key=""
  offered=()
  while IFS= read -r line; do
    if [[ $line == @@* ]]; then
      key=${line#@@}
      offered[$key]=""
    elif [[ -n $key && -n $line ]]; then
      offered[$key]+=$line$'\n'
    fi
  done
}

bash_offers() {
  bash --norc --noprofile -c '
    file=$1
    shift
    source "$file" || exit 3
    spec=$(complete -p dlock 2>/dev/null) || exit 4
    function=$(sed -n "s/.*-F \([^ ]*\) .*/\1/p" <<<"$spec")
    [[ -n $function ]] || exit 5
    for query in "$@"; do
      echo "@@$query"
      read -r -a COMP_WORDS <<<"$query"
      [[ $query == *" " ]] && COMP_WORDS+=("")
      COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
      COMP_LINE=$query
      COMP_POINT=${#COMP_LINE}
      COMPREPLY=()
      "$function" dlock "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
      printf "%s\n" "${COMPREPLY[@]}"
    done
  ' bash-completion-query "$1" "${queries[@]}" 2>/dev/null
}

fish_offers() {
  fish --no-config -c '
    source $argv[1]; or exit 3
    for query in $argv[2..-1]
      echo "@@$query"
      complete -C $query | string replace -r "\t.*" ""
    end
  ' "$1" "${queries[@]}" 2>/dev/null
}

# Lines of the zsh completion between a line starting with $2 and the next
# line that is only ")" or "}".
zsh_block() {
  awk -v start="$2" 'index($0, start) == 1 { on = 1; next } on && /^[)}]$/ { exit } on { print }' "$1"
}

# Whether the zsh spec text names the option: "{-t+,--ttl=}", "'--json[",
# "'-c+[", ... as a word of its own.
zsh_names() {
  local text=$'\n'$1$'\n' pattern="[^[:alnum:]_-]${2}[^[:alnum:]_-]"
  [[ $text =~ $pattern ]]
}

# Whether the text, one item a line, has the line $2.
contains_line() {
  [[ $'\n'$1$'\n' == *$'\n'"$2"$'\n'* ]]
}

# Prints "FILE: what is missing" for what `offered` lacks.
check_offers() {
  local name=$1 sub option
  for sub in "${subcommands[@]}"; do
    contains_line "${offered["dlock "]-}" "$sub" || echo "$name: command $sub"
  done
  for option in "${global_options[@]}"; do
    contains_line "${offered["dlock -"]-}${offered["dlock --"]-}" "$option" || echo "$name: global option $option"
  done
  for sub in "${subcommands[@]}"; do
    local here="${offered["dlock $sub -"]-}${offered["dlock $sub --"]-}"
    for option in ${command_options[$sub]}; do
      contains_line "$here" "$option" || echo "$name: $sub $option"
    done
    for option in "${global_options[@]}"; do
      [[ $option == --version ]] && continue
      contains_line "$here" "$option" || echo "$name: global option $option after $sub"
    done
  done
  contains_line "${offered["dlock run x --"]-}" --ttl || echo "$name: run --ttl between NAME and COMMAND (dlock run x --)"
  contains_line "${offered["dlock run -t 5s x ech"]-}" echo ||
    echo "$name: command names where COMMAND starts (dlock run -t 5s x ech)"
  if contains_line "${offered["dlock run x echo --"]-}" --ttl; then
    echo "$name: run's --ttl offered inside COMMAND (dlock run x echo --)"
  fi
}

# Prints "FILE: what is missing", one line each, for the completions in DIR.
check_dir() {
  local dir=$1 file sub option text globals out

  file=$dir/dlock.bash
  if [[ ! -r $file ]]; then
    echo "dlock.bash: the file is missing"
  else
    if ! out=$(bash --norc --noprofile -c 'source "$1"' load-check "$file" 2>&1) || [[ -n $out ]]; then
      echo "dlock.bash: does not load cleanly with 'source': ${out:-non-zero status}"
    fi
    collect < <(bash_offers "$file")
    check_offers dlock.bash
  fi

  file=$dir/_dlock
  if [[ ! -r $file ]]; then
    echo "_dlock: the file is missing"
  else
    if ! out=$(zsh -n "$file" 2>&1) || [[ -n $out ]]; then
      echo "_dlock: zsh -n fails: ${out:-non-zero status}"
    fi
    text=$(zsh_block "$file" '_dlock_commands() {')
    for sub in "${subcommands[@]}"; do
      grep -Fq -- "'$sub:" <<<"$text" || echo "_dlock: command $sub (in _dlock_commands)"
    done
    globals=$(zsh_block "$file" '_dlock_global_specs=(')
    for option in "${global_options[@]}"; do
      zsh_names "$globals" "$option" || echo "_dlock: global option $option (in _dlock_global_specs)"
    done
    for sub in "${subcommands[@]}"; do
      text=$(zsh_block "$file" "_dlock_$sub() {")
      if [[ -z $text ]]; then
        echo "_dlock: command $sub (no function _dlock_$sub)"
        continue
      fi
      grep -Fq -- '$_dlock_global_specs' <<<"$text" || echo "_dlock: global options after $sub (_dlock_$sub does not pass \$_dlock_global_specs)"
      grep -Fq -- '$_dlock_global_specs' <<<"$text" && text+=$'\n'$globals
      for option in ${command_options[$sub]}; do
        zsh_names "$text" "$option" || echo "_dlock: $sub $option (in _dlock_$sub)"
      done
    done
  fi

  file=$dir/dlock.fish
  if [[ ! -r $file ]]; then
    echo "dlock.fish: the file is missing"
  else
    if ! out=$(fish --no-config -n "$file" 2>&1) || [[ -n $out ]]; then
      echo "dlock.fish: fish -n fails: ${out:-non-zero status}"
    fi
    collect < <(fish_offers "$file")
    check_offers dlock.fish
  fi
}

# The check ----------------------------------------------------------------

missing=$(check_dir "$completions")
if [[ -n $missing ]]; then
  echo "completions: FAIL: missing from the completions in $completions (file: what):"
  sed 's/^/  /' <<<"$missing"
  exit 1
fi

# The check can fail: drop one option of `run` from a copy of each file.
# Long options only: a short one like -t is too common a string to remove
# by line.
probe=""
for option in ${command_options[run]}; do
  [[ $option == --* && $option != --help ]] && probe=$option
done
scratch=$(mktemp -d "${TMPDIR:-/tmp}/dlock-completions.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
for name in "${files[@]}"; do
  grep -Fv -- "${probe#--}" "$completions/$name" >"$scratch/$name"
done
broken=$(check_dir "$scratch")
for name in "${files[@]}"; do
  if ! grep -q -- "^$name: .*$probe" <<<"$broken"; then
    echo "completions: FAIL: self-check: $name without '$probe' was not reported; the check cannot fail for it"
    exit 1
  fi
done

echo "completions: ${#files[@]} files checked, $option_count options, all present"
