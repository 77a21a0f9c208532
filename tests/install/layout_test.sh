#!/usr/bin/env bash
# `cmake --install` with the default prefix (/usr/local) and with /usr, each
# into a DESTDIR: every file lands where Debian 12 looks for it under that
# prefix, and nothing else is installed; the binary is stripped (unless
# the build asked for debug info) and, with the static runtime, needs only
# libc.so.6; the installed binary runs, the etcd
# backend (built in) included; man, bash-completion,
# zsh and fish find their files. What the shells and man search is asked of
# them (zsh's fpath, fish's fish_complete_path, bash-completion's default
# XDG_DATA_DIRS, manpath), with XDG_DATA_DIRS unset as under cron, ssh and
# su; the directories of the prefix are then looked up in the DESTDIR.
#
#   DLOCK_BUILD_DIR=build DLOCK_INSTALL_STRIPPED=1 tests/install/layout_test.sh
#
# DLOCK_INSTALL_STRIPPED (set by CMake): 1 when the build installs
# stripped, 0 when it keeps debug info (DLOCK_INSTALL_DEBUG, a Debug or
# RelWithDebInfo build). Nothing is built: the build directory is installed
# as it is.
set -euo pipefail
: "${DLOCK_BUILD_DIR:?}"
stripped=${DLOCK_INSTALL_STRIPPED:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tmp=$(realpath "$tmp")
fail() { echo "FAIL install layout: $*" >&2; exit 1; }
unset DLOCK_BACKEND DLOCK_CONFIG XDG_DATA_DIRS MANPATH
export HOME="$tmp/home"
mkdir -p "$HOME"

# What each shell searches on this machine, system-wide (not under $HOME).
zsh_fpath=$(zsh -fc 'print -rl -- $fpath')
fish_path=$(fish -c 'printf "%s\n" $fish_complete_path' | grep -v "^$HOME/")
bash_xdg=$(grep -o 'XDG_DATA_DIRS:-[^}]*' /usr/share/bash-completion/bash_completion | head -n1)
bash_xdg=${bash_xdg#XDG_DATA_DIRS:-}
[ -n "$bash_xdg" ] || fail "cannot read bash-completion's default XDG_DATA_DIRS"
# A dlock already installed on this machine would let the lookups below
# succeed without the DESTDIR's files.
for d in $zsh_fpath; do [ ! -e "$d/_dlock" ] || fail "$d/_dlock exists outside the DESTDIR"; done
for d in $fish_path; do [ ! -e "$d/dlock.fish" ] || fail "$d/dlock.fish exists outside the DESTDIR"; done
for d in ${bash_xdg//:/ }; do
  [ ! -e "$d/bash-completion/completions/dlock" ] || fail "$d/bash-completion/completions/dlock exists outside the DESTDIR"
done

# under PREFIX DIR: DIR is PREFIX or below it.
under() { [ "$2" = "$1" ] || [[ $2 == "$1"/* ]]; }

check_elf() { # check_elf FILE
  local sections needed
  sections=$(readelf -S --wide "$1") || fail "$1 is not an ELF file"
  if [ "${DLOCK_ONLY_LIBC:-0}" = 1 ]; then
    # (the dynamic loader, the program's interpreter, is there anyway)
    needed=$(readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -v '^ld-linux' | tr '\n' ' ')
    [ "$needed" = "libc.so.6 " ] ||
      fail "$1 needs $needed, not libc.so.6 alone: each library more is loaded and relocated at every start (libm's ceil and llround were replaced by integer arithmetic for that)"
  fi
  if [ "$stripped" = 1 ]; then
    ! grep -qE '\.debug_info|\.symtab' <<<"$sections" ||
      fail "$1 is not stripped ($(du -h "$1" | cut -f1)): $(grep -oE '\.(debug_[a-z]+|symtab)' <<<"$sections" | tr '\n' ' ')"
  else
    grep -q '\.symtab' <<<"$sections" || fail "$1 was stripped though the build keeps debug info"
  fi
}

check_prefix() { # check_prefix PREFIX ZSH_DIR FISH_DIR (the places expected for PREFIX)
  local prefix=$1 zsh_dir=$2 fish_dir=$3
  local dest="$tmp/dest${prefix//\//-}" root out expected got d found
  root="$dest$prefix"
  DESTDIR="$dest" cmake --install "$DLOCK_BUILD_DIR" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
    fail "cmake --install --prefix $prefix: $(tail -n 3 "$tmp/install.log")"

  # Each file in its place, and nothing else.
  expected=$(printf '%s\n' "$prefix/bin/dlock" \
    "$prefix/share/man/man1/dlock.1" "$prefix/share/bash-completion/completions/dlock" \
    "$zsh_dir/_dlock" "$fish_dir/dlock.fish" | sort)
  got=$(cd "$dest" && find . -type f | sed 's/^\.//' | sort)
  [ "$got" = "$expected" ] || fail "prefix $prefix installs
$got
instead of
$expected"

  check_elf "$root/bin/dlock"

  # The installed binary runs and lists the etcd backend as built in.
  "$root/bin/dlock" -b "file://$tmp/locks" run demo -- true || fail "prefix $prefix: the installed binary cannot run a job"
  out=$("$root/bin/dlock" version) || fail "prefix $prefix: dlock version failed"
  got=$(grep -A1 '^  etcd ' <<<"$out" | sed -n 's/.*schemes etcd:, etcds:; //p')
  [ "$got" = "built in" ] || fail "prefix $prefix: dlock version does not list the etcd backend as built in: $out"
  # Port 1 of loopback refuses the connection: the etcd backend ran when
  # the error is about the server.
  local rc=0
  out=$("$root/bin/dlock" -b etcd://127.0.0.1:1 --connect-timeout 2s ping 2>&1) || rc=$?
  [ "$rc" = 69 ] && grep -q 'cannot connect to etcd' <<<"$out" ||
    fail "prefix $prefix: the installed etcd backend did not run (exit $rc): $out"

  # man: PREFIX/share/man is on the manual path of a user whose PATH has
  # PREFIX/bin, and man finds the page there.
  out=$(PATH="$prefix/bin:/usr/bin:/bin" manpath 2>/dev/null)
  [[ :$out: == *":$prefix/share/man:"* ]] || fail "prefix $prefix: $prefix/share/man is not on manpath ($out)"
  out=$(MANPATH="$root/share/man" man -w dlock 2>&1) || fail "prefix $prefix: man -w dlock: $out"
  [ "$out" = "$root/share/man/man1/dlock.1" ] || fail "prefix $prefix: man -w dlock found $out"

  # bash: bash-completion's loader, with its default XDG_DATA_DIRS whose
  # entries under the prefix are taken from the DESTDIR, loads the file.
  local xdg="" found_bash=""
  for d in ${bash_xdg//:/ }; do
    if under "$prefix" "$d"; then
      xdg+="$dest$d:"
      [ -f "$dest$d/bash-completion/completions/dlock" ] && found_bash=1
    fi
  done
  [ -n "$found_bash" ] || fail "prefix $prefix: the bash completion is in none of bash-completion's directories (${bash_xdg//:/, })"
  out=$(XDG_DATA_DIRS="${xdg%:}" bash --norc --noprofile -c \
    '. /usr/share/bash-completion/bash_completion; __load_completion dlock && complete -p dlock' 2>&1) ||
    fail "prefix $prefix: bash-completion does not load dlock's completion: $out"

  # zsh: a directory of its fpath under the prefix holds _dlock, and
  # compinit, with that directory from the DESTDIR, binds it to dlock.
  found=""
  while IFS= read -r d; do
    under "$prefix" "$d" && [ -f "$dest$d/_dlock" ] && found=$d
  done <<<"$zsh_fpath"
  [ -n "$found" ] || fail "prefix $prefix: _dlock is in no directory of zsh's fpath: $(tr '\n' ' ' <<<"$zsh_fpath")"
  out=$(zsh -fc 'fpath=("$1" $fpath); autoload -Uz compinit; compinit -u -D; print -r -- ${_comps[dlock]}' zsh "$dest$found" 2>&1)
  [ "$out" = _dlock ] || fail "prefix $prefix: zsh's compinit does not bind _dlock to dlock: $out"

  # fish: a directory of fish_complete_path (system-wide) holds dlock.fish,
  # and fish, with that directory from the DESTDIR and dlock on PATH (fish
  # loads the completions of commands it finds), completes dlock's commands.
  found=""
  while IFS= read -r d; do
    { under "$prefix" "$d" || under /etc "$d"; } && [ -f "$dest$d/dlock.fish" ] && found=$d
  done <<<"$fish_path"
  [ -n "$found" ] || fail "prefix $prefix: dlock.fish is in no directory of fish_complete_path: $(tr '\n' ' ' <<<"$fish_path")"
  out=$(PATH="$root/bin:$PATH" fish -c 'set -p fish_complete_path $argv[1]; complete -C"dlock "' "$dest$found" 2>&1)
  grep -q '^run' <<<"$out" || fail "prefix $prefix: fish does not complete dlock's commands: $out"
}

check_prefix /usr/local /usr/local/share/zsh/site-functions /etc/fish/completions
check_prefix /usr /usr/share/zsh/vendor-completions /usr/share/fish/vendor_completions.d
echo "PASS install layout"
