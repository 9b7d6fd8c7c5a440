#!/usr/bin/env bash
# Measures fpfs's read speed against curl on the same WebDAV server, side by side in one run
# (shared/BENCHMARKS.md): a cold sequential read of a 1 GiB file (fresh daemon, empty cache,
# page cache dropped) against `curl -o` of the same file from the same server, and warm re-reads
# (page cache hot; page cache dropped so the block cache on disk serves) against `dd` of a local
# copy. Prints one table of ratios (median, min, max over the repetitions). Run as root.
#   scripts/bench.sh [REPETITIONS]   (default 5)
set -euo pipefail

repetitions="${1:-5}"
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
# shellcheck source=scripts/lib/install-deps.sh
source scripts/lib/install-deps.sh
fpfs_install_deps
swift build -c release --product fpfs --quiet
fpfs="$repo_root/.build/release/fpfs"

work="$(mktemp -d /var/tmp/fpfs-bench.XXXXXX)"
server_pid=""
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
    if mountpoint -q "$work/mnt" 2>/dev/null; then "$fpfs" unmount "$work/mnt" || fusermount3 -u -z "$work/mnt"; fi
    if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    rm -rf --one-file-system "$work"
}
trap cleanup EXIT

mkdir -p "$work/remote" "$work/mnt"
echo "bench: writing a 1 GiB file" >&2
dd if=/dev/urandom of="$work/remote/big.bin" bs=1M count=1024 status=none
cp "$work/remote/big.bin" "$work/local-copy.bin"
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
rclone serve webdav "$work/remote" --addr "127.0.0.1:$port" --config /dev/null --dir-cache-time 0s \
    --log-file "$work/rclone.log" &
server_pid=$!
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.1; done

# Seconds a command takes, to the millisecond.
seconds() {
    local start end
    start=$(date +%s.%N)
    "$@" >/dev/null
    end=$(date +%s.%N)
    awk -v a="$start" -v b="$end" 'BEGIN { print b - a }'
}
# $1 divided by $2.
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { print a / b }'; }
drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }

declare -a cold warm_hot warm_disk
for ((run = 1; run <= repetitions; run++)); do
    drop_caches
    curl_s=$(seconds curl -s -o "$work/curl.out" "http://127.0.0.1:$port/big.bin")
    rm -f "$work/curl.out"
    rm -rf "$work/cache"
    "$fpfs" mount "webdav://127.0.0.1:$port/" "$work/mnt" --cache-dir "$work/cache"
    drop_caches
    fpfs_cold_s=$(seconds dd if="$work/mnt/big.bin" of=/dev/null bs=1M status=none)
    fpfs_hot_s=$(seconds dd if="$work/mnt/big.bin" of=/dev/null bs=1M status=none)
    dd if="$work/local-copy.bin" of=/dev/null bs=1M status=none # into the page cache
    local_hot_s=$(seconds dd if="$work/local-copy.bin" of=/dev/null bs=1M status=none)
    drop_caches
    fpfs_disk_s=$(seconds dd if="$work/mnt/big.bin" of=/dev/null bs=1M status=none)
    drop_caches
    local_disk_s=$(seconds dd if="$work/local-copy.bin" of=/dev/null bs=1M status=none)
    "$fpfs" unmount "$work/mnt"
    cold+=("$(ratio "$curl_s" "$fpfs_cold_s")")
    warm_hot+=("$(ratio "$local_hot_s" "$fpfs_hot_s")")
    warm_disk+=("$(ratio "$local_disk_s" "$fpfs_disk_s")")
    printf 'bench: run %d: curl %.2fs, fpfs cold %.2fs, warm %.2fs (local %.2fs), disk %.2fs (local %.2fs)\n' \
        "$run" "$curl_s" "$fpfs_cold_s" "$fpfs_hot_s" "$local_hot_s" "$fpfs_disk_s" "$local_disk_s" >&2
done

# median min max of the arguments, two decimals.
summary() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {printf "%.2f (%.2f-%.2f)", v[int((NR+1)/2)], v[1], v[NR]}'; }
echo "| benchmark | reference | ratio: median (min-max) of $repetitions | goal |"
echo "|---|---|---|---|"
echo "| cold sequential read, 1 GiB, WebDAV (rclone serve), RTT 0 | curl -o, same server | $(summary "${cold[@]}") | >= 0.8 |"
echo "| warm re-read, page cache hot | dd of a local copy | $(summary "${warm_hot[@]}") | >= 0.95 |"
echo "| warm re-read, page cache dropped | dd of a local copy | $(summary "${warm_disk[@]}") | >= 0.9 |"
