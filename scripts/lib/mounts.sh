#!/usr/bin/env bash
# Helpers to find and remove fuse.fpfs mounts under a directory, for scripts that must never leave
# a mount behind. Sourced by scripts/test.sh.

# Prints the mountpoints of fuse.fpfs mounts at or under DIR, deepest first, one per line.
# /proc/mounts escapes space, tab, newline and backslash in octal; printf %b decodes them.
fpfs_mounts_under() {
    local dir="${1%/}" mountpoint fstype decoded
    while read -r _ mountpoint fstype _; do
        [[ "$fstype" == "fuse.fpfs" ]] || continue
        decoded="$(printf '%b' "$mountpoint")"
        if [[ "$decoded" == "$dir" || "$decoded" == "$dir"/* ]]; then
            printf '%s\n' "$decoded"
        fi
    done </proc/mounts | sort -r
}

# Lazily unmounts every fuse.fpfs mount at or under DIR (the daemon sees the unmount and exits).
fpfs_unmount_under() {
    local mountpoint
    while IFS= read -r mountpoint; do
        echo "fpfs: unmounting leftover mount $mountpoint" >&2
        fusermount3 -u -z "$mountpoint" 2>/dev/null || umount -l "$mountpoint" 2>/dev/null || true
    done < <(fpfs_mounts_under "$1")
}

# Sends SIGTERM to the daemons whose pid files (CACHE_DIR/daemon.pid) lie under DIR and whose
# executable is still fpfs: the tests under DIR started them, so stopping them by pid is safe.
fpfs_stop_daemons_under() {
    local pidfile pid exe
    [[ -d "$1" ]] || return 0
    while IFS= read -r -d '' pidfile; do
        pid="$(tr -dc '0-9' <"$pidfile")"
        [[ -n "$pid" ]] || continue
        exe="$(readlink "/proc/$pid/exe" 2>/dev/null || true)"
        if [[ "${exe##*/}" == "fpfs" ]]; then
            kill -TERM "$pid" 2>/dev/null || true
        fi
    done < <(find "$1" -xdev -name daemon.pid -type f -print0 2>/dev/null)
}

# Kills the process groups of the test servers (Apache, rclone) that tests started and did not
# stop: each writes DIR/servers/PGID while it runs, and the group is only ever the server's own.
fpfs_stop_servers_under() {
    local file pgid
    [[ -d "$1/servers" ]] || return 0
    for file in "$1"/servers/*; do
        [[ -f "$file" ]] || continue
        pgid="${file##*/}"
        [[ "$pgid" =~ ^[0-9]+$ ]] && kill -KILL -- "-$pgid" 2>/dev/null || true
        rm -f "$file"
    done
}
