#!/usr/bin/env bash
# A watch over a test run that has stopped moving. Sourced by scripts/test.sh.

# Waits while PID runs; once LOG has not grown for MINUTES, prints where every thread of PID's
# process group waits and stops the group, so a hung run fails with evidence instead of lasting
# until CI's time limit.
fpfs_watch_for_stall() {
    local log="$1" pid="$2" minutes="$3" size last=-1 quiet=0
    while kill -0 "$pid" 2>/dev/null; do
        sleep 15
        size="$(stat -c %s "$log" 2>/dev/null || echo 0)"
        if [[ "$size" != "$last" ]]; then
            last="$size"
            quiet=0
            continue
        fi
        quiet=$((quiet + 15))
        if ((quiet >= minutes * 60)); then
            echo "fpfs: the tests printed nothing for $minutes minutes; stopping them" >&2
            fpfs_report_waits "$pid" >&2
            kill -TERM -- "-$pid" 2>/dev/null || true
            return
        fi
    done
}

# Prints each thread of process group PGID with the kernel function it waits in and the top of
# its kernel stack, then how many requests each FUSE connection has waiting. Reads /proc only
# (procps may be missing), and unmounts the FUSE control folder again if it mounted it.
fpfs_report_waits() {
    local stat pid rest task mounted=""
    for stat in /proc/[0-9]*/stat; do
        pid="${stat#/proc/}"
        pid="${pid%/stat}"
        # Field 5, the process group, comes after the command name, which may hold spaces.
        rest="$(cat "$stat" 2>/dev/null)" || continue
        read -r _ _ pgrp _ <<<"${rest##*) }"
        [[ "$pgrp" == "$1" ]] || continue
        for task in /proc/"$pid"/task/*; do
            printf '%s/%s %s: %s\n' "$pid" "${task##*/}" "$(cat "$task/comm" 2>/dev/null)" \
                "$(cat "$task/wchan" 2>/dev/null)"
            sed -n '1,5s/^/    /p' "$task/stack" 2>/dev/null || true
        done
    done
    if ! mountpoint -q /sys/fs/fuse/connections; then
        mount -t fusectl none /sys/fs/fuse/connections 2>/dev/null && mounted=yes
    fi
    for task in /sys/fs/fuse/connections/*/; do
        [[ -e "$task/waiting" ]] && echo "FUSE connection ${task%/}: $(cat "$task/waiting") waiting"
    done
    if [[ -n "$mounted" ]]; then umount /sys/fs/fuse/connections 2>/dev/null || true; fi
}
