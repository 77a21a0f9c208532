# shellcheck shell=bash disable=SC2154,SC2034,SC2120 # tmpdir and fail come from lib.sh; MADE is for the caller
# Throw-away local users for the file backend's multi-user scenarios. Source
# after lib.sh. The tests run as root (as in CI): without root they fail,
# they do not skip.
#
#   make_group              create a group; its name is in $MADE
#   make_user [GROUP...]    create a user (its own primary group, and the
#                           GROUPs as supplementary ones); its name is in $MADE
#   as_user USER CMD...     run CMD as USER with its groups and nothing of
#                           root's (no capabilities, no config files)
#
# The users and groups are removed on exit, after lib.sh's cleanup has
# killed what the test started. $tmpdir is made traversable (0755) so that
# the users reach the directories the test makes below it.

[ "$(id -u)" = 0 ] || fail "needs root, to create throw-away users (CI runs the tests as root)"
for _tool in useradd userdel groupadd groupdel setpriv; do
  command -v "$_tool" >/dev/null || fail "$_tool is not installed"
done
chmod 0755 "$tmpdir"
chmod 0755 "$tmpdir/xdg"

_made_users=()
_made_groups=()
_user_serial=0

_users_cleanup() {
  local name
  for name in "${_made_users[@]}"; do userdel "$name" >/dev/null 2>&1; done
  for name in "${_made_groups[@]}"; do groupdel "$name" >/dev/null 2>&1; done
}
trap '_cleanup; _users_cleanup' EXIT

# Names stay under 32 bytes and unique per test run (pid and a serial).
_next_name() {
  _user_serial=$((_user_serial + 1))
  _name=dlk$1$$x$_user_serial
}

make_group() {
  local name
  _next_name g
  name=$_name
  groupadd "$name" || fail "groupadd $name failed"
  _made_groups+=("$name")
  MADE=$name
}

make_user() {
  local name groups
  _next_name u
  name=$_name
  groups=$(
    IFS=,
    echo "$*"
  )
  useradd -M -U -s /bin/sh ${groups:+-G "$groups"} "$name" || fail "useradd $name failed"
  _made_users+=("$name")
  _made_groups+=("$name")
  MADE=$name
}

as_user() {
  local user=$1
  shift
  env HOME=/nonexistent XDG_CONFIG_HOME="$tmpdir/xdg" USER="$user" LOGNAME="$user" \
    setpriv --reuid="$user" --regid="$user" --init-groups --inh-caps=-all -- "$@"
}
