# fish completion for dlock(1)
#
# Installed where fish looks (/usr/share/fish/vendor_completions.d for /usr,
# /etc/fish/completions for /usr/local); to try it without
# installing: source completions/dlock.fish
#
# Written by hand. tests/e2e/completions_test.sh checks that every command
# and option of `dlock --help` is offered: keep the lists in step.

# The command (run, acquire, ...) on the line so far; false if none yet.
# Global options may stand before it, some with a value to skip.
function __dlock_command
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l skip_value 0
    for token in $tokens
        if test $skip_value = 1
            set skip_value 0
            continue
        end
        switch $token
            case -b --backend --namespace --config --password-file --connect-timeout
                set skip_value 1
            case '-*'
            case run acquire renew release status list ping doctor config version
                echo $token
                return 0
            case '*'
                return 1
        end
    end
    return 1
end

function __dlock_no_command
    not __dlock_command >/dev/null
end

# True if the command on the line is one of the arguments.
function __dlock_using
    set -l command (__dlock_command); or return 1
    contains -- $command $argv
end

# Where run's COMMAND starts, as an index into the words of the line (the
# current one included): after NAME, the first word that is not an option
# of run or a global option (or the word after NAME once "--" was given).
# Fails while COMMAND has not started, so that dlock's options are offered
# only before it.
function __dlock_command_start
    set -l tokens (commandline -opc) (commandline -ct)
    set -l seen_run 0
    set -l named 0
    set -l dashdash 0
    set -l i 2
    while test $i -le (count $tokens)
        set -l token $tokens[$i]
        if test $dashdash = 0; and test $seen_run = 1; and test "$token" = --
            set dashdash 1
        else if test $dashdash = 0; and begin
                string match -qr -- '^-.' $token; or begin
                    test "$token" = -; and test $i = (count $tokens)
                end
            end
            if contains -- $token -b --backend --namespace --config --password-file --connect-timeout -c -t --ttl -w --wait --kill-after --lost-kill-after --max-runtime -E --conflict-exit-code --lost-exit-code --min-hold --if-unavailable --log --metrics-file --limit
                set i (math $i + 1)
            end
        else if test $seen_run = 0
            test "$token" = run; or return 1
            set seen_run 1
        else if test $named = 0
            set named 1
        else
            echo $i
            return 0
        end
        set i (math $i + 1)
    end
    return 1
end

function __dlock_in_command
    __dlock_command_start >/dev/null
end

# True while the command has no positional argument (NAME or PREFIX) yet.
function __dlock_wants_name
    set -l tokens (commandline -opc)
    set -l seen_command 0
    set -l skip_value 0
    for token in $tokens[2..-1]
        if test $skip_value = 1
            set skip_value 0
            continue
        end
        switch $token
            case -b --backend --namespace --config --password-file --connect-timeout -c -t --ttl -w --wait --kill-after --lost-kill-after --max-runtime -E --conflict-exit-code --lost-exit-code --min-hold --if-unavailable --log --metrics-file --limit
                set skip_value 1
            case '-*'
            case '*'
                if test $seen_command = 0
                    set seen_command 1
                else
                    return 1
                end
        end
    end
    test $seen_command = 1
end

# Completes run's COMMAND [ARG...] as a command line of its own.
function __dlock_complete_command
    set -l start (__dlock_command_start); or return
    set -l tokens (commandline -opc) (commandline -ct)
    set -l rest $tokens[$start..-1]
    complete --do-complete=(string join -- ' ' (string escape -- $rest[1..-2]) $rest[-1])
end

function __dlock_backends
    set -l current (commandline -ct | string replace -r -- '^--backend=' '')
    if string match -q -- 'file://*' $current
        for dir in (__fish_complete_directories (string replace -- 'file://' '' $current) '')
            echo file://(string split -f1 \t -- $dir)
        end
        return
    end
    if string match -q -- 'redis+unix://*' $current
        for path in (__fish_complete_path (string replace -- 'redis+unix://' '' $current))
            echo redis+unix://(string split -f1 \t -- $path)
        end
        return
    end
    printf '%s\n' file: file:/// redis:// rediss:// redis+unix:// redis-sentinel:// redlock:// redlocks:// zk:// postgres:// postgresql:// etcd:// etcds://
end

# Durations, loosely: typed digits get each unit appended, else a few
# common values.
function __dlock_durations
    set -l current (commandline -ct | string replace -r -- '^--[a-z-]+=' '')
    if string match -qr -- '^[0-9]+(\.[0-9]*)?$' $current
        printf '%s\n' $current{ms,s,m,h}
    else
        printf '%s\n' 250ms 1s 5s 10s 30s 1m 5m 10m 30m 1h 1h30m 2h $argv
    end
end

# Names of held locks, from `dlock list --json` with the backend options
# already on the command line; quietly nothing if that is not quick.
function __dlock_lock_names
    set -l tokens (commandline -opc)
    set -l dlock $tokens[1]
    command -q $dlock; or test -x $dlock; or return
    set -l args
    set -l i 2
    while test $i -le (count $tokens)
        switch $tokens[$i]
            case -b --backend --namespace --config --password-file
                if test $i -lt (count $tokens)
                    set -a args $tokens[$i] $tokens[(math $i + 1)]
                end
                set i (math $i + 1)
            case '--backend=*' '--namespace=*' '--config=*' '--password-file=*'
                set -a args $tokens[$i]
        end
        set i (math $i + 1)
    end
    set -l runner
    command -q timeout; and set runner timeout 1
    $runner $dlock $args list --json 2>/dev/null </dev/null | string replace -rf -- '^\s*"name": "([^"]*)".*' '$1'
end

complete -c dlock -f

# Commands
complete -c dlock -n __dlock_no_command -a run -d 'Run a command while holding a lock'
complete -c dlock -n __dlock_no_command -a acquire -d 'Take a lock and print its release token'
complete -c dlock -n __dlock_no_command -a renew -d 'Extend the lease of a lock taken with acquire'
complete -c dlock -n __dlock_no_command -a release -d 'Release a lock taken with acquire, or --force'
complete -c dlock -n __dlock_no_command -a status -d 'Show who holds a lock'
complete -c dlock -n __dlock_no_command -a list -d 'One row per held lock'
complete -c dlock -n __dlock_no_command -a ping -d 'Check that the backend is reachable'
complete -c dlock -n __dlock_no_command -a doctor -d 'Check that the backend can keep the guarantees, and what to change'
complete -c dlock -n __dlock_no_command -a config -d 'Print the effective settings and their sources'
complete -c dlock -n __dlock_no_command -a version -d 'Print the version and the backends'

# Global options, before or after the command
complete -c dlock -n 'not __dlock_in_command' -s h -l help -d 'Print help and exit'
complete -c dlock -n 'not __dlock_in_command' -l version -d 'Print the version and the built-in backends'
complete -c dlock -n 'not __dlock_in_command' -s b -l backend -x -a '(__dlock_backends)' -d 'Where locks live'
complete -c dlock -n 'not __dlock_in_command' -l namespace -x -a dlock -d 'Isolate applications sharing one backend'
complete -c dlock -n 'not __dlock_in_command' -l config -r -F -d 'Config file'
complete -c dlock -n 'not __dlock_in_command' -l password-file -r -F -d 'Read the backend password from FILE'
complete -c dlock -n 'not __dlock_in_command' -l connect-timeout -x -a '(__dlock_durations)' -d 'Bound on connecting and every round trip'
complete -c dlock -n 'not __dlock_in_command' -s q -l quiet -d 'No message when the lock is busy'
complete -c dlock -n 'not __dlock_in_command' -s v -l verbose -d 'Timings and renewals; repeat for more'

# run
complete -c dlock -n '__dlock_using run; and not __dlock_in_command' -s c -x -a '(__fish_complete_command)' -d 'Run SHELL COMMAND via /bin/sh -c'
complete -c dlock -n '__dlock_using run acquire renew doctor; and not __dlock_in_command' -s t -l ttl -x -a '(__dlock_durations)' -d 'Lease length'
complete -c dlock -n '__dlock_using run acquire; and not __dlock_in_command' -s w -l wait -x -a '(__dlock_durations 0 forever)' -d 'How long to wait for the lock'
complete -c dlock -n '__dlock_using run; and not __dlock_in_command' -l kill-after -x -a '(__dlock_durations)' -d 'Grace between SIGTERM and SIGKILL'
complete -c dlock -n '__dlock_using run; and not __dlock_in_command' -l lost-kill-after -x -a '(__dlock_durations)' -d 'Grace between SIGTERM and SIGKILL after a confirmed loss'
complete -c dlock -n '__dlock_using run; and not __dlock_in_command' -l max-runtime -x -a '(__dlock_durations)' -d 'Stop the job after D and exit 124'
complete -c dlock -n '__dlock_using run acquire; and not __dlock_in_command' -s E -l conflict-exit-code -x -a '0 75' -d 'Exit status when the lock is busy'
complete -c dlock -n '__dlock_using run; and not __dlock_in_command' -l lost-exit-code -x -a 76 -d 'Exit status when the lock is lost'
complete -c dlock -n '__dlock_using run; and not __dlock_in_command' -l min-hold -x -a '(__dlock_durations)' -d 'Keep the lock at least D after taking it'
complete -c dlock -n '__dlock_using run; and not __dlock_in_command' -l if-unavailable -x -a 'fail\t"exit 69" run\t"run the job WITHOUT the lock" skip\t"exit as busy"' -d 'When the backend cannot be reached'
complete -c dlock -n '__dlock_using run; and not __dlock_in_command' -l log -r -a 'stderr syslog journal' -d 'Record each event'
complete -c dlock -n '__dlock_using run; and not __dlock_in_command' -l metrics-file -r -F -d 'Keep per-lock figures, Prometheus text format'
complete -c dlock -n '__dlock_using run acquire; and not __dlock_in_command' -l limit -x -a '2 3 5 10' -d 'A semaphore: at most N holders at once'
complete -c dlock -n '__dlock_using run acquire; and not __dlock_in_command' -s s -l shared -d 'A shared (read) lock'
complete -c dlock -n '__dlock_using run acquire; and not __dlock_in_command' -s x -l exclusive -d 'An exclusive (write) lock, the default'
complete -c dlock -n '__dlock_using run; and not __dlock_wants_name; and not __dlock_in_command' --arguments=-- -d 'COMMAND [ARG...] follows (needed only if it starts with -)'
complete -c dlock -n '__dlock_using run; and __dlock_in_command' -x -a '(__dlock_complete_command)'

# acquire, renew, status, list, ping, doctor, config: --json
complete -c dlock -n '__dlock_using acquire' -l json -d 'Print name, token, fence, mode, ttl_ms and expires_at as JSON'
complete -c dlock -n '__dlock_using renew' -l json -d 'Print name, ttl_ms and expires_at as JSON'
complete -c dlock -n '__dlock_using status ping doctor config' -l json -d 'One JSON document'
complete -c dlock -n '__dlock_using list' -l json -d 'A JSON array'

# release
complete -c dlock -n '__dlock_using release' -l force -d 'Break the lock whoever holds it, and print who held it'

# Lock names
complete -c dlock -n '__dlock_using run status renew release list; and __dlock_wants_name' -x -a '(__dlock_lock_names)' -d 'Held lock'
