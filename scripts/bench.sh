#!/usr/bin/env bash
# Measures fpfs's speed as docs/BENCHMARKS.md says it is judged: ratios against references measured
# side by side in one run, interleaved, median (min-max) over the repetitions. The server is
# Apache mod_dav on 127.0.0.1 (started and stopped by pid, as the tests do); the references are
# curl against the same server, `rclone mount` of the same server (--vfs-cache-mode off and full),
# the local disk, and fpfs's own cache file. Run as root (it drops caches and mounts).
#   [FPFS_BENCH_BINARY=PATH] scripts/bench.sh [--quick] [--repetitions N] [--only B1,B2,...]
#     --quick: smaller data (512 MiB instead of 4 GiB, 10k instead of 200k files, fewer random
#     reads and names) and 3 repetitions instead of 5, under 10 minutes; --only: just those
#     benchmarks (B4, B9 and B11 come with B1 and B6); --s3fs-limit: the seconds S3's s3fs
#     `ls -lR` may take (default 300; it did not end in 16 minutes at 200k keys), a run stopped
#     there counting as that long, so its ratio is a lower bound.
# Round-trip time (B2, B3, B5, B8) is added by scripts/lib/delay-proxy.py in front of the server:
# this kernel has no netem qdisc. S1-S4 measure an S3 bucket on a one-node Ceph RADOS Gateway
# (scripts/lib/ceph-rgw.sh) against curl (SigV4), rclone mount of the bucket and s3fs.
set -euo pipefail
# Bash reads a script while it runs it, and a full run lasts an hour: the whole script is one
# group, parsed before any of it runs and ending in `exit`, so that editing this file during a
# run can neither change nor break it (a full run's table was lost that way, 2026-11-29).
{

quick=0
repetitions=""
s3fs_limit=300
only="B1,B2,B3,B5,B6,B7,B8,B10,S1,S2,S3,S4"
usage() { echo "usage: scripts/bench.sh [--quick] [--repetitions N] [--only B1,S1,...] [--s3fs-limit SECONDS]" >&2; exit 2; }
while (($#)); do
    case "$1" in
    --quick) quick=1 ;;
    --repetitions) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || usage; repetitions="$2"; shift ;;
    --only) [[ "${2:-}" =~ ^[BS][0-9]+(,[BS][0-9]+)*$ ]] || usage; only="$2"; shift ;;
    --s3fs-limit) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || usage; s3fs_limit="$2"; shift ;;
    *) usage ;;
    esac
    shift
done
# Five repetitions, as docs/BENCHMARKS.md asks of a full run; three for a quick look.
repetitions="${repetitions:-$((quick ? 3 : 5))}"
# wants BN: whether benchmark BN was asked for.
wants() { [[ ",$only," == *",$1,"* ]]; }
# Sizes: the big file, the tree (dirs × per_dir + flat), random reads at RTT 0, the first MiB
# of the big file B2 reads at added RTT, names for B7 (fewer through rclone mount, which renames
# about 15 a second), and B8's files.
if ((quick)); then
    big_mib=512 dirs=50 per_dir=100 flat=5000 random_reads=100 b2_mib=256 names=1000 rclone_names=200 reader_mib=32
else
    big_mib=4096 dirs=1000 per_dir=100 flat=100000 random_reads=1000 b2_mib=1024 names=10000 rclone_names=500 reader_mib=64
fi

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
# shellcheck source=scripts/lib/install-deps.sh
source scripts/lib/install-deps.sh
fpfs_install_deps
# FPFS_BENCH_BINARY: measure that binary instead of building the release one.
fpfs="${FPFS_BENCH_BINARY:-$repo_root/.build/release/fpfs}"
if [[ -z "${FPFS_BENCH_BINARY:-}" ]]; then swift build -c release --product fpfs --quiet; fi

work="$(mktemp -d /var/tmp/fpfs-bench.XXXXXX)"
chmod 755 "$work"
server_pgid=""
rclone_pid=""
rgw_pgid=""
proxy_pids=()
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
    for mnt in "$work/mnt" "$work/rclone-mnt" "$work/s3fs-mnt"; do
        if mountpoint -q "$mnt" 2>/dev/null; then fusermount3 -u -z "$mnt" 2>/dev/null || true; fi
    done
    if [[ -n "$rclone_pid" ]]; then kill "$rclone_pid" 2>/dev/null || true; wait "$rclone_pid" 2>/dev/null || true; fi
    for cache in "$work/cache" "$work/s3-cache"; do
        if [[ -f "$cache/daemon.pid" ]]; then kill "$(cat "$cache/daemon.pid")" 2>/dev/null || true; fi
    done
    if [[ -n "$rgw_pgid" ]]; then kill -TERM -- "-$rgw_pgid" 2>/dev/null || true; wait "$rgw_pgid" 2>/dev/null || true; fi
    for pid in "${proxy_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    if [[ -n "$server_pgid" ]]; then kill -TERM -- "-$server_pgid" 2>/dev/null || true; wait "$server_pgid" 2>/dev/null || true; fi
    rm -rf --one-file-system "$work"
}
trap cleanup EXIT

log() { echo "bench: $*" >&2; }

# --- data -------------------------------------------------------------------------------------
# write_tree DIR: B6's tree (and S3's keys): dirs folders of per_dir empty files, and flat more in one.
write_tree() {
    python3 - "$1" "$dirs" "$per_dir" "$flat" <<'EOF'
import os, sys
root, dirs, per_dir, flat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
for d in range(dirs):
    os.makedirs(f"{root}/d{d:04}")
    for f in range(per_dir):
        open(f"{root}/d{d:04}/f{f:03}", "w").close()
os.makedirs(f"{root}/flat")
for f in range(flat):
    open(f"{root}/flat/f{f:06}", "w").close()
EOF
}
mkdir -p "$work/remote" "$work/mnt" "$work/rclone-mnt" "$work/apache/lock"
if wants B1 || wants B2 || wants B3; then
    log "writing a ${big_mib} MiB file of random bytes"
    head -c $((big_mib << 20)) /dev/urandom >"$work/remote/big.bin"
    printf 'x' >"$work/remote/one.bin"
fi
truncate -s 10G "$work/remote/sparse.bin"
if wants B6; then
    log "writing a tree of $((dirs * per_dir + flat)) files"
    write_tree "$work/remote/tree"
    cp -a "$work/remote/tree" "$work/local-tree"
fi
if wants B8; then
    log "writing 16 files of ${reader_mib} MiB for B8"
    mkdir "$work/remote/readers"
    for ((i = 0; i < 16; i++)); do head -c $((reader_mib << 20)) /dev/urandom >"$work/remote/readers/r$i"; done
fi
mkdir -m 777 "$work/remote/writes"
chmod -R a+rX "$work/remote" "$work/apache"
chmod 777 "$work/apache/lock"

# --- server -----------------------------------------------------------------------------------
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
cat >"$work/apache/httpd.conf" <<EOF
ServerRoot $work/apache
PidFile $work/apache/httpd.pid
Listen 127.0.0.1:$port
ServerName 127.0.0.1
$(for m in mpm_event authz_core alias dav dav_fs; do echo "LoadModule ${m}_module /usr/lib/apache2/modules/mod_${m}.so"; done)
User www-data
Group www-data
ThreadsPerChild 64
MaxRequestWorkers 128
KeepAlive On
MaxKeepAliveRequests 0
ErrorLog $work/apache/error.log
LogFormat "%m\t%>s\t%O\t%{Range}i\t%U" bench
CustomLog $work/apache/access.log bench
DavLockDB $work/apache/lock/davlock
Alias /dav $work/remote
<Directory $work/remote>
  Dav On
  # Apache 2.4.54 and later refuse request bodies over 1 GiB by default (413); B10 sends 4 GiB.
  LimitRequestBody 0
  Options None
  AllowOverride None
  Require all granted
</Directory>
EOF
setsid /usr/sbin/apache2 -f "$work/apache/httpd.conf" -DFOREGROUND >/dev/null 2>&1 &
server_pgid=$!
url="http://127.0.0.1:$port/dav"
for _ in $(seq 100); do curl -s -o /dev/null "$url/" && break; sleep 0.1; done

# A delaying proxy per added round-trip time: rtt_port[MS] is its port, rtt_url[MS] its URL.
declare -A rtt_port rtt_url
for rtt in 20 50; do
    rtt_port[$rtt]="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    python3 scripts/lib/delay-proxy.py "${rtt_port[$rtt]}" "$port" "$rtt" >"$work/proxy-$rtt.out" 2>&1 &
    proxy_pids+=($!)
    rtt_url[$rtt]="http://127.0.0.1:${rtt_port[$rtt]}/dav"
    for _ in $(seq 100); do grep -q ready "$work/proxy-$rtt.out" && break; sleep 0.1; done
done
rtt_port[0]=$port
rtt_url[0]=$url
# The mounts below reach the server through this port: the server's, or a proxy's.
remote_port=$port

# --- helpers ----------------------------------------------------------------------------------
now() { date +%s.%N; }
# Seconds a command takes, to the millisecond; a failure is logged (its time would mean nothing).
seconds() {
    local start end
    start=$(now)
    "$@" >/dev/null || log "failed with status $?: $*"
    end=$(now)
    awk -v a="$start" -v b="$end" 'BEGIN { print b - a }'
}
calc() { awk "BEGIN { print $* }"; }
drop_caches() { sync; echo 3 >/proc/sys/vm/drop_caches; }
# Bytes Apache has sent so far (its access log is written after each answer; wait a moment).
server_bytes() { sleep 0.3; awk -F'\t' '{ s += $3 } END { printf "%.0f\n", s }' "$work/apache/access.log"; }
# user+system CPU seconds of a process.
cpu_seconds() { awk '{ print ($14 + $15) / 100 }' "/proc/$1/stat"; }
rss_kib() { awk '/^Rss:/ { print $2 }' "/proc/$1/smaps_rollup"; }
peak_rss_kib() { awk '/^VmHWM:/ { print $2 }' "/proc/$1/status"; }

fpfs_pid=""
fpfs_mount() {
    rm -rf "$work/cache"
    # No polling, as rclone is given --dir-cache-time 1h: a round on Apache walks the whole tree.
    "$fpfs" mount "webdav://127.0.0.1:$remote_port/dav/" "$work/mnt" --cache-dir "$work/cache" --poll-interval 0 "$@"
    fpfs_pid="$(cat "$work/cache/daemon.pid")"
}
fpfs_unmount() {
    "$fpfs" unmount "$work/mnt"
    # `fpfs unmount` returns once the daemon has exited; a zombie waits only to be reaped.
    while [[ "$(sed 's/.*) //' "/proc/$fpfs_pid/stat" 2>/dev/null | cut -c1)" =~ ^[^ZX]$ ]]; do sleep 0.05; done
}
# rclone mount MODE [FLAGS...] (MODE off or full) of the same server, read-only unless FLAGS
# say --read-only=false.
rclone_mount() {
    local mode="$1"
    shift
    rm -rf "$work/rclone-cache"
    rclone mount ":webdav,url='http://127.0.0.1:$remote_port/dav/':" "$work/rclone-mnt" --config /dev/null --read-only \
        --vfs-cache-mode "$mode" --cache-dir "$work/rclone-cache" --dir-cache-time 1h --attr-timeout 1h \
        --log-file "$work/rclone.log" "$@" &
    rclone_pid=$!
    for _ in $(seq 200); do mountpoint -q "$work/rclone-mnt" && break; sleep 0.05; done
}
rclone_unmount() {
    fusermount3 -u "$work/rclone-mnt"
    wait "$rclone_pid" 2>/dev/null || true
    rclone_pid=""
}
# curl with the S3 keys (SigV4), for the S rows' references.
s3curl() {
    curl -s -f --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
        -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@"
}
# fpfs, rclone and s3fs mounts of the bucket; fpfs and rclone at ENDPOINT (the server's, or a
# logging proxy's).
s3_fpfs_mount() {
    rm -rf "$work/s3-cache"
    "$fpfs" mount s3://bench "$work/mnt" --cache-dir "$work/s3-cache" --s3-endpoint "$1" --poll-interval 0
    fpfs_pid="$(cat "$work/s3-cache/daemon.pid")"
}
# s3_rclone_mount MODE ENDPOINT: as rclone_mount, of the bucket.
s3_rclone_mount() {
    rm -rf "$work/rclone-cache"
    # The endpoint in the remote's name: it overrides the remote's own, as a flag would not.
    rclone mount "rgw,endpoint='$2':bench" "$work/rclone-mnt" --config /dev/null --read-only \
        --vfs-cache-mode "$1" --cache-dir "$work/rclone-cache" --dir-cache-time 1h --attr-timeout 1h \
        --log-file "$work/rclone.log" &
    rclone_pid=$!
    for _ in $(seq 200); do mountpoint -q "$work/rclone-mnt" && break; sleep 0.05; done
}
s3fs_mount() {
    s3fs bench "$work/s3fs-mnt" -o url="$s3_url" -o use_path_request_style -o passwd_file="$work/s3fs.passwd" -o ro
    for _ in $(seq 200); do mountpoint -q "$work/s3fs-mnt" && break; sleep 0.05; done
}
# An `ls` stopped at the limit may leave s3fs busy for a moment: tried again, then lazily.
s3fs_unmount() {
    for _ in $(seq 50); do fusermount3 -u "$work/s3fs-mnt" 2>/dev/null && return; sleep 0.2; done
    fusermount3 -uz "$work/s3fs-mnt"
}
# s3_delete KEY: deletes a key of the bucket and frees its bytes now: RGW leaves a deleted or
# overwritten object's data to its garbage collector for two hours, and the memstore OSD (16 GiB
# of RAM) would fill with S4's 4 GiB copies and then hang.
s3_delete() {
    s3curl -X DELETE "$s3_url/bench/$1" -o /dev/null
    radosgw-admin -c "$work/rgw/ceph.conf" -n client.admin gc process --include-all 2>/dev/null
}
# same_bytes FILE ORIGINAL WHAT: ends the run when FILE (read back through a mount or from the
# server) is not ORIGINAL byte for byte: a wrong read makes every figure meaningless.
same_bytes() {
    cmp "$1" "$2" >&2 || { log "FAILED: $3 differs from what was put there"; exit 1; }
}

# Samples: a file per series, one number a line.
sample() { echo "$2" >>"$work/samples.$1"; }
# median min max of a series, two decimals.
summary() {
    sort -g "$work/samples.$1" | awk '{ v[NR] = $1 } END { printf "%.2f (%.2f-%.2f)", v[int((NR + 1) / 2)], v[1], v[NR] }'
}
median() { sort -g "$work/samples.$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
rows=()
# row NAME REFERENCE SERIES GOAL-TEXT OP LIMIT: a table row; holds when median OP LIMIT.
row() {
    local m holds
    # A series no run could measure (its reference failed every time, as logged).
    if [[ ! -s "$work/samples.$3" ]]; then
        rows+=("| $1 | $2 | not measured | $4 | $([[ $4 == "-" ]] && echo - || echo no) |")
        return
    fi
    m="$(median "$3")"
    holds="$(awk -v m="$m" -v l="$6" -v op="$5" 'BEGIN { print ((op == ">=" ? m >= l : m <= l) ? "yes" : "no") }')"
    [[ $4 == "-" ]] && holds="-"
    rows+=("| $1 | $2 | $(summary "$3") | $4 | $holds |")
    printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$holds" >>"$work/rows.tsv"
}

# The S3 server (S1-S4): Ceph RGW with the test user's keys, a bucket `bench` holding big.bin (as
# B1's) and tree/ (as B6's), put there by curl and rclone. rclone reaches it as the remote `rgw:`.
if wants S1 || wants S2 || wants S3 || wants S4; then
    setsid scripts/lib/ceph-rgw.sh "$work/rgw" >"$work/rgw.out" 2>&1 &
    rgw_pgid=$!
    for _ in $(seq 600); do [[ -s "$work/rgw/endpoint" ]] && break; sleep 0.1; done
    s3_url="$(cat "$work/rgw/endpoint")"
    AWS_ACCESS_KEY_ID="$(sed -n 's/^FPFS_RGW_ACCESS_KEY="\(.*\)"$/\1/p' scripts/lib/ceph-rgw.sh)"
    AWS_SECRET_ACCESS_KEY="$(sed -n 's/^FPFS_RGW_SECRET_KEY="\(.*\)"$/\1/p' scripts/lib/ceph-rgw.sh)"
    export AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_CONFIG_FILE=/nonexistent AWS_SHARED_CREDENTIALS_FILE=/nonexistent
    # rclone's AWS SDK refuses AWS_CA_BUNDLE with rclone's own HTTP transport; the endpoint is http.
    unset AWS_CA_BUNDLE
    export RCLONE_CONFIG_RGW_TYPE=s3 RCLONE_CONFIG_RGW_PROVIDER=Ceph RCLONE_CONFIG_RGW_ENDPOINT="$s3_url" \
        RCLONE_CONFIG_RGW_ACCESS_KEY_ID="$AWS_ACCESS_KEY_ID" RCLONE_CONFIG_RGW_SECRET_ACCESS_KEY="$AWS_SECRET_ACCESS_KEY"
    printf '%s:%s\n' "$AWS_ACCESS_KEY_ID" "$AWS_SECRET_ACCESS_KEY" >"$work/s3fs.passwd"
    chmod 600 "$work/s3fs.passwd"
    mkdir -p "$work/s3fs-mnt" "$work/s3-curl"
    s3curl -X PUT "$s3_url/bench" -o /dev/null
    if wants S1 || wants S2 || wants S4; then
        log "putting a ${big_mib} MiB object of random bytes"
        head -c $((big_mib << 20)) /dev/urandom >"$work/s3-big.bin"
        s3curl -T "$work/s3-big.bin" "$s3_url/bench/big.bin" -o /dev/null
    fi
    if wants S3; then
        log "putting a tree of $((dirs * per_dir + flat)) keys"
        write_tree "$work/s3-tree"
        rclone copy "$work/s3-tree" rgw:bench/tree --config /dev/null --transfers 32 --checkers 32
    fi
fi

# --- B1, B4, B9 (streaming), B11: cold sequential read ------------------------------------------
bench_b1() {
    local run bs mode curl_s fpfs_s fpfs_cpu rclone_s rclone_cpu cpu0 cache_file hot_s cache_hot_s disk_s cache_disk_s
    for ((run = 1; run <= repetitions; run++)); do
        drop_caches
        curl_s=$(seconds curl -s -o "$work/curl.out" "$url/big.bin")
        rm -f "$work/curl.out"
        for bs in 1M 128K; do
            fpfs_mount
            ls "$work/mnt" >/dev/null
            drop_caches
            cpu0=$(cpu_seconds "$fpfs_pid")
            fpfs_s=$(seconds dd if="$work/mnt/big.bin" of=/dev/null bs=$bs status=none)
            fpfs_cpu=$(calc "($(cpu_seconds "$fpfs_pid") - $cpu0) / $big_gib")
            if [[ $bs == 1M ]]; then
                sample peak_rss "$(calc "$(peak_rss_kib "$fpfs_pid") / 1024")"
                # B4: the same file again, page cache hot, against the cache file itself. Both are
                # timed at their third read: a page's second read moves it to the active list, which
                # costs (LRU lock) and would count against whichever side is on its second read.
                cache_file="$(find "$work/cache" -type f -size +$((big_mib / 2))M | head -1)"
                dd if="$work/mnt/big.bin" of=/dev/null bs=1M status=none
                hot_s=$(seconds dd if="$work/mnt/big.bin" of=/dev/null bs=1M status=none)
                dd if="$cache_file" of=/dev/null bs=1M status=none
                cache_hot_s=$(seconds dd if="$cache_file" of=/dev/null bs=1M status=none)
                drop_caches
                disk_s=$(seconds dd if="$work/mnt/big.bin" of=/dev/null bs=1M status=none)
                drop_caches
                cache_disk_s=$(seconds dd if="$cache_file" of=/dev/null bs=1M status=none)
                sample warm_hot "$(calc "$cache_hot_s / $hot_s")"
                sample warm_disk "$(calc "$cache_disk_s / $disk_s")"
            fi
            fpfs_unmount
            for mode in off full; do
                rclone_mount $mode
                ls "$work/rclone-mnt" >/dev/null
                drop_caches
                cpu0=$(cpu_seconds "$rclone_pid")
                rclone_s=$(seconds dd if="$work/rclone-mnt/big.bin" of=/dev/null bs=$bs status=none)
                [[ $mode == off ]] && rclone_cpu=$(calc "($(cpu_seconds "$rclone_pid") - $cpu0) / $big_gib")
                rclone_unmount
                sample "rclone_${mode}_$bs" "$(calc "$rclone_s / $fpfs_s")"
            done
            sample "curl_$bs" "$(calc "$curl_s / $fpfs_s")"
            sample "cpu_$bs" "$(calc "$fpfs_cpu / $rclone_cpu")"
            log "B1 run $run, reads of $bs: curl ${curl_s}s, fpfs ${fpfs_s}s (cpu ${fpfs_cpu}s/GiB), rclone off/full last ${rclone_s}s (cpu off ${rclone_cpu}s/GiB)"
        done
        log "B4 run $run: warm fpfs ${hot_s}s vs cache file ${cache_hot_s}s; from disk fpfs ${disk_s}s vs ${cache_disk_s}s"
    done
    for bs in 1M 128K; do
        row "B1 cold sequential read, $big_mib MiB, $bs reads, RTT 0" "curl -o into the cache folder ÷ fpfs" "curl_$bs" "≥ 0.8 (fpfs speed ÷ curl)" ">=" 0.8
        row "B1 same" "rclone mount --vfs-cache-mode off, time ÷ fpfs time" "rclone_off_$bs" "≥ 1.5" ">=" 1.5
        row "B1 same" "rclone mount --vfs-cache-mode full, time ÷ fpfs time" "rclone_full_$bs" "≥ 1.5" ">=" 1.5
        row "B11 CPU per GiB during B1, $bs reads" "fpfs ÷ rclone (cache off)" "cpu_$bs" "≤ 0.5" "<=" 0.5
    done
    row "B4 warm re-read, page cache hot" "dd of the cache file, cache hot (speed fpfs ÷ dd)" warm_hot "≥ 0.95" ">=" 0.95
    row "B4 warm re-read, page cache dropped" "dd of the cache file, dropped (speed fpfs ÷ dd)" warm_disk "≥ 0.9" ">=" 0.9
    row "B9 peak daemon RSS streaming $big_mib MiB (MiB)" "64 MiB + depth 8 × 64 KiB block" peak_rss "≤ 64.5" "<=" 64.5
}

# --- B2: B1 at RTT 20 and 50 ms -----------------------------------------------------------------
# parallel_ranges URL BYTES N: the first BYTES of URL as N range requests at once, into files.
parallel_ranges() {
    local piece=$(($2 / $3)) i
    local -a pids=()
    for ((i = 0; i < $3; i++)); do
        curl -s -f -r $((i * piece))-$(((i + 1) * piece - 1)) -o "$work/part.$i" "$1" &
        pids+=($!)
    done
    wait "${pids[@]}"
    rm -f "$work"/part.*
}
bench_b2() {
    local run rtt mode single_s parallel_s fpfs_s rclone_s bytes=$((b2_mib << 20))
    for ((run = 1; run <= repetitions; run++)); do
        for rtt in 20 50; do
            drop_caches
            single_s=$(seconds curl -s -f -r 0-$((bytes - 1)) -o "$work/curl.out" "${rtt_url[$rtt]}/big.bin")
            rm -f "$work/curl.out"
            drop_caches
            parallel_s=$(seconds parallel_ranges "${rtt_url[$rtt]}/big.bin" $bytes 8)
            remote_port=${rtt_port[$rtt]}
            fpfs_mount
            ls "$work/mnt" >/dev/null
            drop_caches
            fpfs_s=$(seconds dd if="$work/mnt/big.bin" of=/dev/null bs=1M count="$b2_mib" status=none)
            fpfs_unmount
            for mode in off full; do
                rclone_mount $mode
                ls "$work/rclone-mnt" >/dev/null
                drop_caches
                rclone_s=$(seconds dd if="$work/rclone-mnt/big.bin" of=/dev/null bs=1M count="$b2_mib" status=none)
                rclone_unmount
                sample "b2_rclone_${mode}_$rtt" "$(calc "$rclone_s / $fpfs_s")"
            done
            remote_port=$port
            sample "b2_parallel_$rtt" "$(calc "$parallel_s / $fpfs_s")"
            sample "b2_single_$rtt" "$(calc "$single_s / $fpfs_s")"
            log "B2 run $run, RTT $rtt ms: curl ${single_s}s, 8 ranges ${parallel_s}s, fpfs ${fpfs_s}s, rclone off/full last ${rclone_s}s"
        done
    done
    for rtt in 20 50; do
        row "B2 cold sequential read, first $b2_mib MiB, 1M reads, RTT $rtt ms" "8 parallel curl -r ranges ÷ fpfs (time)" "b2_parallel_$rtt" "≥ 0.85" ">=" 0.85
        row "B2 same" "curl -o, one stream, time ÷ fpfs time" "b2_single_$rtt" "≥ 2" ">=" 2
        row "B2 same" "rclone mount --vfs-cache-mode off, time ÷ fpfs time" "b2_rclone_off_$rtt" "≥ 3" ">=" 3
        row "B2 same" "rclone mount --vfs-cache-mode full, time ÷ fpfs time" "b2_rclone_full_$rtt" "≥ 3" ">=" 3
    done
}

# --- B3: time to first byte ---------------------------------------------------------------------
# Open and read one byte, timed inside one process (so process start-up is not counted).
first_byte() { python3 -c 'import sys, time; t = time.perf_counter(); f = open(sys.argv[1], "rb"); f.read(1); print(time.perf_counter() - t)' "$1"; }
# Seconds of `GET URL` with Range 0-0 on a keep-alive connection left idle for 0.2 s after a first
# request: fpfs's first read goes on a connection idle since the listing, and on this box a
# request after a pause costs more than one right after another (the server hands the connection
# from its listener to a worker, and idle vCPUs wake).
idle_connection_get() {
    python3 - "$1" <<'EOF'
import http.client, sys, time, urllib.parse
url = urllib.parse.urlsplit(sys.argv[1])
connection = http.client.HTTPConnection(url.hostname, url.port)
def get():
    start = time.perf_counter()
    connection.request("GET", url.path, headers={"Range": "bytes=0-0"})
    connection.getresponse().read()
    return time.perf_counter() - start
get()
time.sleep(0.2)
print(get())
EOF
}
bench_b3() {
    local run rtt file curl_s idle_s fpfs_s
    for ((run = 1; run <= repetitions; run++)); do
        for rtt in 0 20 50; do
            remote_port=${rtt_port[$rtt]}
            for file in one.bin big.bin; do
                curl_s=$(curl -s -o /dev/null -o /dev/null -r 0-0 -w '%{time_total}\n' "${rtt_url[$rtt]}/$file" -r 0-0 "${rtt_url[$rtt]}/$file" | tail -1)
                fpfs_mount
                stat "$work/mnt/$file" >/dev/null
                fpfs_s=$(first_byte "$work/mnt/$file")
                fpfs_unmount
                sample "ttfb_ms_${rtt}_$file" "$(calc "($fpfs_s - $curl_s) * 1000")"
                sample "ttfb_ratio_${rtt}_$file" "$(calc "$fpfs_s / $curl_s")"
                idle_s=
                if ((rtt == 0)); then
                    idle_s=$(idle_connection_get "${rtt_url[$rtt]}/$file")
                    sample "ttfb_idle_ms_$file" "$(calc "($fpfs_s - $idle_s) * 1000")"
                fi
                log "B3 run $run, RTT $rtt ms, $file: curl ${curl_s}s, fpfs ${fpfs_s}s${idle_s:+, a GET after a pause ${idle_s}s}"
            done
        done
        remote_port=$port
    done
    row "B3 time to first byte, 1-byte file, RTT 0" "ms more than curl -r 0-0 on a warm connection" ttfb_ms_0_one.bin "≤ 1 ms" "<=" 1
    row "B3 time to first byte, $big_mib MiB file, RTT 0" "ms more than curl -r 0-0 on a warm connection" ttfb_ms_0_big.bin "≤ 1 ms" "<=" 1
    row "B3 same, 1-byte file (no goal)" "ms more than a GET on a keep-alive connection idle 0.2 s" ttfb_idle_ms_one.bin "-" "<=" 0
    row "B3 same, $big_mib MiB file (no goal)" "ms more than a GET on a keep-alive connection idle 0.2 s" ttfb_idle_ms_big.bin "-" "<=" 0
    for rtt in 20 50; do
        row "B3 time to first byte, 1-byte file, RTT $rtt ms" "fpfs time ÷ curl -r 0-0 on a warm connection" "ttfb_ratio_${rtt}_one.bin" "≤ 1.1" "<=" 1.1
        row "B3 time to first byte, $big_mib MiB file, RTT $rtt ms" "fpfs time ÷ curl -r 0-0 on a warm connection" "ttfb_ratio_${rtt}_big.bin" "≤ 1.1" "<=" 1.1
    done
}

# --- B5: random 4 KiB reads in a 10 GiB file ------------------------------------------------------
# Reads COUNT random 4 KiB pieces with JOBS threads; prints reads per second.
random_reads() {
    python3 - "$1" "$2" "$3" <<'EOF'
import os, random, sys, threading, time
path, count, jobs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
size = os.stat(path).st_size
fd = os.open(path, os.O_RDONLY)
def work(seed):
    rng = random.Random(seed)
    for _ in range(count // jobs):
        os.pread(fd, 4096, rng.randrange(size // 4096) * 4096)
threads = [threading.Thread(target=work, args=(seed,)) for seed in range(jobs)]
start = time.perf_counter()
for t in threads: t.start()
for t in threads: t.join()
print(count / (time.perf_counter() - start))
EOF
}
# The block B5 counts in: fpfs's default --block-size.
block_bytes=$((64 << 10))
# Random reads as the remote path alone allows them: JOBS clients, each on one keep-alive
# connection, GET COUNT / JOBS random aligned BLOCK-byte ranges of URL in all (SIZE bytes long).
# Prints GETs per second. Through the delaying proxy a 64 KiB answer and four at once each cost
# more than the 1-byte round trip the other reference takes.
random_gets() {
    python3 - "$@" <<'EOF'
import http.client, random, sys, threading, time, urllib.parse
url, count, jobs, block, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
parts = urllib.parse.urlsplit(url)
def work(seed, connection):
    rng = random.Random(seed)
    for _ in range(count // jobs):
        offset = rng.randrange(size // block) * block
        connection.request("GET", parts.path, headers={"Range": "bytes=%d-%d" % (offset, offset + block - 1)})
        connection.getresponse().read()
connections = [http.client.HTTPConnection(parts.hostname, parts.port) for _ in range(jobs)]
for connection in connections:
    connection.request("GET", parts.path, headers={"Range": "bytes=0-0"})
    connection.getresponse().read()
threads = [threading.Thread(target=work, args=(seed, connection)) for seed, connection in enumerate(connections)]
start = time.perf_counter()
for t in threads: t.start()
for t in threads: t.join()
print(count / (time.perf_counter() - start))
EOF
}
bench_b5() {
    local run rtt jobs count iops gets before fpfs_bytes rclone_bytes round_trip
    for ((run = 1; run <= repetitions; run++)); do
        for rtt in 0 20; do
            # The path's own round trip, as B3 measures it: the proxy adds a little to RTT.
            round_trip=$(curl -s -o /dev/null -o /dev/null -r 0-0 -w '%{time_total}\n' "${rtt_url[$rtt]}/sparse.bin" -r 0-0 "${rtt_url[$rtt]}/sparse.bin" | tail -1)
            # At 20 ms a read costs a round trip: a quarter as many reads keep the run short.
            count=$((rtt ? random_reads / 4 : random_reads))
            remote_port=${rtt_port[$rtt]}
            for jobs in 1 4; do
                gets=
                ((rtt)) && gets=$(random_gets "${rtt_url[$rtt]}/sparse.bin" "$count" $jobs $block_bytes $((10 << 30)))
                fpfs_mount
                ls "$work/mnt" >/dev/null
                before=$(server_bytes)
                iops=$(random_reads "$work/mnt/sparse.bin" "$count" $jobs)
                fpfs_bytes=$(($(server_bytes) - before))
                fpfs_unmount
                rclone_mount off
                ls "$work/rclone-mnt" >/dev/null
                before=$(server_bytes)
                random_reads "$work/rclone-mnt/sparse.bin" "$count" $jobs >/dev/null
                rclone_bytes=$(($(server_bytes) - before))
                rclone_unmount
                sample "random_blocks_${rtt}_$jobs" "$(calc "$fpfs_bytes / ($count * $block_bytes)")"
                sample "random_vs_rclone_${rtt}_$jobs" "$(calc "$fpfs_bytes / $rclone_bytes")"
                sample "random_iops_${rtt}_$jobs" "$iops"
                ((rtt)) && sample "random_iops_model_${rtt}_$jobs" "$(calc "$iops / ($jobs * 1000 / $rtt)")"
                ((rtt)) && sample "random_iops_path_${rtt}_$jobs" "$(calc "$iops * $round_trip / $jobs")"
                ((rtt)) && sample "random_iops_gets_${rtt}_$jobs" "$(calc "$iops / $gets")"
                log "B5 run $run, RTT $rtt ms (curl's round trip ${round_trip}s${gets:+, random GETs by $jobs clients $gets/s}), $jobs jobs: fpfs $fpfs_bytes bytes, $iops reads/s; rclone $rclone_bytes bytes"
            done
        done
        remote_port=$port
    done
    for rtt in 0 20; do
        for jobs in 1 4; do
            row "B5 random 4 KiB reads, 10 GiB file, $jobs jobs, RTT $rtt ms" "server bytes per read, in 64 KiB blocks" "random_blocks_${rtt}_$jobs" "≤ 4" "<=" 4
            row "B5 same" "server bytes ÷ rclone mount (cache off)'s" "random_vs_rclone_${rtt}_$jobs" "≤ 0.1" "<=" 0.1
            if ((rtt)); then
                row "B5 same" "reads/s ÷ (jobs ÷ RTT)" "random_iops_model_${rtt}_$jobs" "≥ 0.9" ">=" 0.9
                row "B5 same" "reads/s ÷ (jobs ÷ curl -r 0-0's round trip through the same proxy)" "random_iops_path_${rtt}_$jobs" "≥ 0.9" ">=" 0.9
                row "B5 same" "reads/s ÷ random one-block GETs by as many keep-alive clients through the same proxy" "random_iops_gets_${rtt}_$jobs" "≥ 0.9" ">=" 0.9
            else
                row "B5 same (reads/s, no goal at RTT 0)" "-" "random_iops_${rtt}_$jobs" "-" ">=" 0
            fi
        done
    done
}

# --- B6, B9 (items): listing a tree -------------------------------------------------------------
# The listing requests alone: one PROPFIND (depth 1) per folder on one connection.
propfind_all() {
    local -a args=()
    local d
    for d in "$work"/remote/tree/*/; do
        d="${d%/}"
        args+=(-X PROPFIND -H "Depth: 1" -o /dev/null "$url/tree/${d##*/}/" --next)
    done
    curl -s -X PROPFIND -H "Depth: 1" -o /dev/null "$url/tree/" --next "${args[@]}" -s -o /dev/null "$url/"
}
bench_b6() {
    local run requests_s idle_kib cold_s warm_s local_s rclone_s items=$((dirs * per_dir + flat + dirs + 1))
    for ((run = 1; run <= repetitions; run++)); do
        requests_s=$(seconds propfind_all)
        fpfs_mount
        idle_kib=$(rss_kib "$fpfs_pid")
        cold_s=$(seconds ls -lR "$work/mnt/tree")
        warm_s=$(seconds ls -lR "$work/mnt/tree")
        # The daemon hands freed heap back to the system within a second of the work that freed
        # it (DECISIONS 81): memory it keeps, not garbage it has yet to return, is what counts.
        sleep 2
        sample item_bytes "$(calc "($(rss_kib "$fpfs_pid") - $idle_kib) * 1024 / $items")"
        # A mount that polls (the default) also walks the whole tree at every round on a remote
        # without a change log, as Apache is: what it keeps after one counts too (DECISIONS 83);
        # the round's end wakes the heap trimmer (DECISIONS 135).
        "$fpfs" signal "$work/mnt" >/dev/null
        sleep 2
        sample item_bytes_polled "$(calc "($(rss_kib "$fpfs_pid") - $idle_kib) * 1024 / $items")"
        fpfs_unmount
        ls -lR "$work/local-tree" >/dev/null
        local_s=$(seconds ls -lR "$work/local-tree")
        rclone_mount off
        ls -lR "$work/rclone-mnt/tree" >/dev/null
        rclone_s=$(seconds ls -lR "$work/rclone-mnt/tree")
        rclone_unmount
        sample list_cold "$(calc "$cold_s / $requests_s")"
        sample list_warm "$(calc "$warm_s / $local_s")"
        sample list_rclone "$(calc "$rclone_s / $warm_s")"
        log "B6 run $run, ls -lR of $items items: PROPFINDs ${requests_s}s, fpfs cold ${cold_s}s warm ${warm_s}s, local ${local_s}s, rclone warm ${rclone_s}s"
    done
    row "B6 ls -lR of $items items, cold" "fpfs time ÷ the PROPFINDs alone (curl)" list_cold "≤ 1.2" "<=" 1.2
    row "B6 ls -lR, warm" "fpfs time ÷ local disk" list_warm "≤ 1.5" "<=" 1.5
    row "B6 ls -lR, warm" "rclone mount warm time ÷ fpfs" list_rclone "≥ 3" ">=" 3
    row "B9 daemon memory per known item (bytes)" "(RSS after ls -lR − RSS after mount) ÷ items" item_bytes "≤ 256" "<=" 256
    row "B9 the same after a change round (fpfs signal)" "(RSS after ls -lR and a round − RSS after mount) ÷ items" item_bytes_polled "≤ 256" "<=" 256
}

# --- B7: metadata operations --------------------------------------------------------------------
# metadata_ops DIR N: creates N empty files in DIR, stats them (then five times more, cached),
# renames and unlinks them, then makes N folders; prints "OPERATION PER-SECOND" lines.
metadata_ops() {
    python3 - "$1" "$2" <<'EOF'
import os, sys, time
root, count = sys.argv[1], int(sys.argv[2])
os.makedirs(f"{root}/files")
os.makedirs(f"{root}/folders")
names = [f"{root}/files/n{i:05}" for i in range(count)]
def timed(label, action, passes=1):
    start = time.perf_counter()
    for _ in range(passes):
        for i in range(count):
            try:
                action(i)
            except OSError as error:
                # No rate: rclone's rename of a file just created can fail on the server after
                # it returned, and the unlink of the new name then fails with EIO.
                print(f"bench: {label} failed at name {i} of {count}: {error}", file=sys.stderr)
                return
    print(label, passes * count / (time.perf_counter() - start))
timed("create", lambda i: os.close(os.open(names[i], os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)))
timed("stat", lambda i: os.stat(names[i]))
# A pass of cached stats takes tens of milliseconds, short against the machine's noise and the
# uploads of the files just created: five.
timed("stat_cached", lambda i: os.stat(names[i]), passes=5)
timed("rename", lambda i: os.rename(names[i], names[i] + "r"))
timed("unlink", lambda i: os.unlink(names[i] + "r"))
timed("mkdir", lambda i: os.mkdir(f"{root}/folders/d{i:05}"))
EOF
}
bench_b7() {
    local run op value
    local -A rate
    for ((run = 1; run <= repetitions; run++)); do
        rate=()
        rm -rf "$work/remote/writes/"* "$work/local-writes"
        mkdir -p "$work/local-writes"
        while read -r op value; do rate[local_$op]=$value; done < <(metadata_ops "$work/local-writes/b7" "$names")
        fpfs_mount
        while read -r op value; do rate[fpfs_$op]=$value; done < <(metadata_ops "$work/mnt/writes/b7-fpfs" "$names")
        # The same count as through rclone: a folder's size changes the cost of its operations.
        # Once the first round is on the server: rclone starts with nothing left to send either,
        # where fpfs would otherwise still be sending the round's thousands of folders.
        "$fpfs" sync "$work/mnt" --timeout 600 >/dev/null
        while read -r op value; do rate[fpfs_few_$op]=$value; done < <(metadata_ops "$work/mnt/writes/b7-fpfs-few" "$rclone_names")
        fpfs_unmount
        rclone_mount off --read-only=false
        while read -r op value; do rate[rclone_$op]=$value; done < <(metadata_ops "$work/rclone-mnt/writes/b7-rclone" "$rclone_names")
        rclone_unmount
        # An operation that failed has no rate, and its run no sample.
        for op in create stat_cached rename unlink mkdir; do
            if [[ -n "${rate[fpfs_$op]:-}" && -n "${rate[local_$op]:-}" ]]; then
                sample "b7_local_$op" "$(calc "${rate[fpfs_$op]} / ${rate[local_$op]}")"
            fi
            if [[ -n "${rate[fpfs_few_$op]:-}" && -n "${rate[rclone_$op]:-}" ]]; then
                sample "b7_rclone_$op" "$(calc "${rate[fpfs_few_$op]} / ${rate[rclone_$op]}")"
            fi
        done
        log "B7 run $run, operations per second, $names names (local/fpfs) and $rclone_names (fpfs/rclone):$(
            for op in create stat stat_cached rename unlink mkdir; do
                printf ' %s %.0f/%.0f %.0f/%.0f' $op "${rate[local_$op]:-nan}" "${rate[fpfs_$op]:-nan}" "${rate[fpfs_few_$op]:-nan}" "${rate[rclone_$op]:-nan}"
            done
        )"
    done
    row "B7 stat of $names names, cached" "fpfs ÷ local disk, operations per second" b7_local_stat_cached "≥ 0.9" ">=" 0.9
    row "B7 create of $rclone_names empty files" "fpfs ÷ rclone mount (cache off), operations per second" b7_rclone_create "≥ 5" ">=" 5
    for op in create rename unlink mkdir; do
        row "B7 $op, $names names (no goal)" "fpfs ÷ local disk, operations per second" "b7_local_$op" "-" ">=" 0
    done
    for op in rename unlink mkdir; do
        row "B7 $op, $rclone_names names (no goal)" "fpfs ÷ rclone mount (cache off), operations per second" "b7_rclone_$op" "-" ">=" 0
    done
}

# --- B8: readers in parallel at added RTT ----------------------------------------------------------
# parallel_readers FILE...: reads each file in a thread of its own, all at once; prints the
# aggregate bytes per second and Jain's fairness index of the readers' own rates.
parallel_readers() {
    python3 - "$@" <<'EOF'
import os, sys, threading, time
paths = sys.argv[1:]
rates = [0.0] * len(paths)
total = [0]
def read(index):
    fd = os.open(paths[index], os.O_RDONLY)
    start, size = time.perf_counter(), 0
    while chunk := os.read(fd, 1 << 20):
        size += len(chunk)
    os.close(fd)
    rates[index] = size / (time.perf_counter() - start)
    total[0] += size
threads = [threading.Thread(target=read, args=(i,)) for i in range(len(paths))]
start = time.perf_counter()
for t in threads: t.start()
for t in threads: t.join()
print(total[0] / (time.perf_counter() - start), sum(rates) ** 2 / (len(rates) * sum(r * r for r in rates)))
EOF
}
bench_b8() {
    local run rtt readers depth stream_s stream_rate aggregate fairness model proxied ceiling own_ceiling i
    local -a urls files
    local -A own
    for ((run = 1; run <= repetitions; run++)); do
        # The stream rate and the ceiling: one curl stream of all 16 files at RTT 0, cold.
        urls=()
        for ((i = 0; i < 16; i++)); do urls+=(-o /dev/null "$url/readers/r$i"); done
        drop_caches
        stream_s=$(seconds curl -s -f "${urls[@]}")
        stream_rate=$(calc "16 * $reader_mib * 1048576 / $stream_s")
        # fpfs's own ceiling (what B1 measures, here with as many readers): the same readers at
        # RTT 0 and depth 32, cold. Against it, a row shows what added latency alone costs.
        for readers in 1 16; do
            files=()
            for ((i = 0; i < readers; i++)); do files+=("$work/mnt/readers/r$i"); done
            fpfs_mount --pipeline-depth 32
            ls "$work/mnt/readers" >/dev/null
            drop_caches
            read -r aggregate fairness < <(parallel_readers "${files[@]}")
            own[$readers]=$aggregate
            fpfs_unmount
        done
        for rtt in 20 50; do
            remote_port=${rtt_port[$rtt]}
            # What the delaying proxy lets through at this RTT (DECISIONS 75): the 16 files as 16
            # parallel curl streams through it, cold. The proxy is a Python process on the same
            # two cores, so it caps every client below the RTT 0 stream rate; netem would not.
            urls=()
            for ((i = 0; i < 16; i++)); do urls+=(-o /dev/null "${rtt_url[$rtt]}/readers/r$i"); done
            drop_caches
            proxied=$(calc "16 * $reader_mib * 1048576 / $(seconds curl -s -f --parallel --parallel-max 16 "${urls[@]}")")
            for readers in 1 16; do
                files=()
                for ((i = 0; i < readers; i++)); do files+=("$work/mnt/readers/r$i"); done
                for depth in 1 8 32; do
                    fpfs_mount --pipeline-depth $depth
                    ls "$work/mnt/readers" >/dev/null
                    drop_caches
                    read -r aggregate fairness < <(parallel_readers "${files[@]}")
                    fpfs_unmount
                    # The model's block is a streaming request, at least 1 MiB in fpfs whatever
                    # --block-size is (DECISIONS 90), so it stays 1 MiB.
                    model=$(calc "$depth * 1048576 / ($rtt / 1000 + 1048576 / $stream_rate)")
                    ceiling=$(calc "($model < $proxied) ? $model : $proxied")
                    own_ceiling=$(calc "($model < ${own[$readers]}) ? $model : ${own[$readers]}")
                    model=$(calc "($model < $stream_rate) ? $model : $stream_rate")
                    sample "b8_${rtt}_${readers}_$depth" "$(calc "$aggregate / $model")"
                    sample "b8_proxied_${rtt}_${readers}_$depth" "$(calc "$aggregate / $ceiling")"
                    sample "b8_own_${rtt}_${readers}_$depth" "$(calc "$aggregate / $own_ceiling")"
                    sample "b8_jain_${rtt}_${readers}_$depth" "$fairness"
                    log "B8 run $run, RTT $rtt ms, $readers readers, depth $depth: $(calc "$aggregate / 1048576") MiB/s, model $(calc "$model / 1048576"), through the proxy $(calc "$proxied / 1048576"), fpfs at RTT 0 $(calc "${own[$readers]} / 1048576"), Jain $fairness"
                done
            done
        done
        remote_port=$port
    done
    for rtt in 20 50; do
        for readers in 1 16; do
            for depth in 1 8 32; do
                row "B8 $readers readers of $reader_mib MiB, depth $depth, RTT $rtt ms" "aggregate ÷ min(curl's stream rate, depth × 1 MiB ÷ (RTT + 1 MiB ÷ stream rate))" "b8_${rtt}_${readers}_$depth" "≥ 0.85" ">=" 0.85
                row "B8 same" "aggregate ÷ min(16 curl streams through the same proxy, the model)" "b8_proxied_${rtt}_${readers}_$depth" "≥ 0.85" ">=" 0.85
                row "B8 same" "aggregate ÷ min(fpfs at RTT 0 with as many readers, the model)" "b8_own_${rtt}_${readers}_$depth" "≥ 0.85" ">=" 0.85
                if ((readers > 1)); then
                    row "B8 same" "Jain's fairness index of the readers' rates" "b8_jain_${rtt}_${readers}_$depth" "≥ 0.9" ">=" 0.9
                fi
            done
        done
    done
}

# --- B10: write-back ---------------------------------------------------------------------------
# An application's time to write through the mount (a big file with fsync; many small files)
# against the same on the local disk, and the time until the server holds it all (the write
# plus `fpfs sync`) against curl uploading the same bytes over one connection.
bench_b10() {
    local run small_files=$((quick ? 2000 : 10000))
    local local_big_s local_small_s curl_big_s curl_small_s app_big_s sync_big_s app_small_s sync_small_s
    log "B10: ${big_mib} MiB written with fsync, ${small_files} files of 4 KiB"
    python3 - "$work/small" "$small_files" <<'PY'
import os, sys
root, count = sys.argv[1], int(sys.argv[2])
for d in range(count // 100):
    os.makedirs(f"{root}/d{d:03}")
    for f in range(100):
        with open(f"{root}/d{d:03}/f{f:02}", "wb") as out:
            out.write(os.urandom(4096))
PY
    # A curl config that uploads every small file over one connection, folders made first.
    {
        (cd "$work/small" && find . -mindepth 1 -type d | sort) | while read -r folder; do
            echo "url = \"$url/writes/curl-small/${folder#./}/\""
            echo 'request = "MKCOL"'
            echo 'next'
        done
        (cd "$work/small" && find . -type f | sort) | while read -r file; do
            echo "upload-file = \"$work/small/${file#./}\""
            echo "url = \"$url/writes/curl-small/${file#./}\""
            echo 'next'
        done
    } | sed '$d' >"$work/curl-small.conf"
    for ((run = 1; run <= repetitions; run++)); do
        rm -rf "$work/remote/writes/"* "$work/local-writes"
        mkdir -p "$work/local-writes"
        local_big_s=$(seconds dd if=/dev/zero of="$work/local-writes/big" bs=1M count="$big_mib" conv=fsync status=none)
        local_small_s=$(seconds bash -c "cp -r '$work/small' '$work/local-writes/small' && sync")
        curl_big_s=$(seconds curl -s -f -T "$work/local-writes/big" "$url/writes/curl-big")
        curl -s -f -X MKCOL "$url/writes/curl-small/" -o /dev/null
        curl_small_s=$(seconds curl -s -f -K "$work/curl-small.conf" -o /dev/null)
        rm -rf "$work/remote/writes/"*
        fpfs_mount
        app_big_s=$(seconds dd if=/dev/zero of="$work/mnt/writes/big" bs=1M count="$big_mib" conv=fsync status=none)
        sync_big_s=$(seconds "$fpfs" sync "$work/mnt" --timeout 3600)
        app_small_s=$(seconds bash -c "cp -r '$work/small' '$work/mnt/writes/small' && sync")
        sync_small_s=$(seconds "$fpfs" sync "$work/mnt" --timeout 3600)
        fpfs_unmount
        cmp -s "$work/local-writes/big" "$work/remote/writes/big" || log "B10: the server's copy of big differs"
        diff -r -q "$work/small" "$work/remote/writes/small" >/dev/null || log "B10: the server's small files differ"
        sample b10_big_app "$(calc "$local_big_s / $app_big_s")"
        sample b10_big_remote "$(calc "($app_big_s + $sync_big_s) / $curl_big_s")"
        sample b10_small_app "$(calc "$local_small_s / $app_small_s")"
        sample b10_small_remote "$(calc "($app_small_s + $sync_small_s) / $curl_small_s")"
        log "B10 run $run: big: local ${local_big_s}s, fpfs ${app_big_s}s + sync ${sync_big_s}s, curl ${curl_big_s}s; small: local ${local_small_s}s, fpfs ${app_small_s}s + sync ${sync_small_s}s, curl ${curl_small_s}s"
    done
    row "B10 ${big_gib} GiB sequential write + fsync" "local disk ÷ fpfs (time the app waits)" b10_big_app "≥ 0.8" ">=" 0.8
    row "B10 the same, until on the server" "fpfs (write + fpfs sync) ÷ curl -T" b10_big_remote "≤ 1.1" "<=" 1.1
    row "B10 ${small_files} files of 4 KiB (cp -r)" "local disk ÷ fpfs (time the app waits)" b10_small_app "≥ 0.8" ">=" 0.8
    row "B10 the same, until on the server" "fpfs (cp + fpfs sync) ÷ curl -K, one connection" b10_small_remote "≤ 1.1" "<=" 1.1
}

# --- S1-S4: the same on an S3 bucket (Ceph RGW) --------------------------------------------------
# S1: B1 on the bucket, 1 MiB reads: curl's signed GET into the cache folder's disk, rclone mount
# (off, full) and s3fs.
bench_s1() {
    local run mode curl_s fpfs_s rclone_s rclone_times s3fs_s
    for ((run = 1; run <= repetitions; run++)); do
        rclone_times=""
        drop_caches
        curl_s=$(seconds s3curl -o "$work/s3-curl/big.bin" "$s3_url/bench/big.bin")
        rm -f "$work/s3-curl/big.bin"
        s3_fpfs_mount "$s3_url"
        ls "$work/mnt" >/dev/null
        drop_caches
        fpfs_s=$(seconds dd if="$work/mnt/big.bin" of=/dev/null bs=1M status=none)
        fpfs_unmount
        for mode in off full; do
            s3_rclone_mount $mode "$s3_url"
            ls "$work/rclone-mnt" >/dev/null
            drop_caches
            rclone_s=$(seconds dd if="$work/rclone-mnt/big.bin" of=/dev/null bs=1M status=none)
            rclone_unmount
            sample "s1_rclone_$mode" "$(calc "$rclone_s / $fpfs_s")"
            rclone_times+=" $mode ${rclone_s}s"
        done
        s3fs_mount
        ls "$work/s3fs-mnt" >/dev/null
        drop_caches
        s3fs_s=$(seconds dd if="$work/s3fs-mnt/big.bin" of=/dev/null bs=1M status=none)
        s3fs_unmount
        sample s1_curl "$(calc "$curl_s / $fpfs_s")"
        sample s1_s3fs "$(calc "$s3fs_s / $fpfs_s")"
        log "S1 run $run: curl ${curl_s}s, fpfs ${fpfs_s}s, rclone$rclone_times, s3fs ${s3fs_s}s"
    done
    # The object read back equal (issue 52): a cold read through a fresh mount, compared with
    # the uploaded file, untimed.
    s3_fpfs_mount "$s3_url"
    drop_caches
    same_bytes "$work/mnt/big.bin" "$work/s3-big.bin" "S1: big.bin read through fpfs"
    fpfs_unmount
    log "S1: the $big_mib MiB object read through fpfs equals the uploaded file"
    row "S1 cold sequential read, $big_mib MiB object, 1M reads" "signed curl -o into the cache folder ÷ fpfs" s1_curl "≥ 0.8 (fpfs speed ÷ curl)" ">=" 0.8
    row "S1 same" "rclone mount --vfs-cache-mode off, time ÷ fpfs time" s1_rclone_off "≥ 1.5" ">=" 1.5
    row "S1 same" "rclone mount --vfs-cache-mode full, time ÷ fpfs time" s1_rclone_full "≥ 1.5" ">=" 1.5
    row "S1 same" "s3fs, time ÷ fpfs time" s1_s3fs "-" ">=" 0
}

# S2: B5 on the bucket: random 4 KiB reads of big.bin, the bytes the server sent counted by
# Tests/TestServers/s3-fault-proxy.py (mode pass, logging every answer) in front of RGW.
bench_s2() {
    local run proxy_port proxy_pid before fpfs_bytes rclone_bytes count=$random_reads
    : >"$work/s3-proxy.log"
    # On a port it picks itself (0) and names once it listens.
    python3 Tests/TestServers/s3-fault-proxy.py 0 "${s3_url##*:}" pass "$work/s3-proxy.log" \
        >"$work/s3-proxy.out" 2>&1 &
    proxy_pid=$!
    proxy_pids+=("$proxy_pid")
    for _ in $(seq 100); do grep -q '^ready [0-9]*$' "$work/s3-proxy.out" && break; sleep 0.1; done
    proxy_port="$(sed -n 's/^ready \([0-9]*\)$/\1/p' "$work/s3-proxy.out")"
    for ((run = 1; run <= repetitions; run++)); do
        s3_fpfs_mount "http://127.0.0.1:$proxy_port"
        ls "$work/mnt" >/dev/null
        before=$(proxy_bytes)
        random_reads "$work/mnt/big.bin" "$count" 1 >/dev/null
        fpfs_bytes=$(($(proxy_bytes) - before))
        fpfs_unmount
        s3_rclone_mount off "http://127.0.0.1:$proxy_port"
        ls "$work/rclone-mnt" >/dev/null
        before=$(proxy_bytes)
        random_reads "$work/rclone-mnt/big.bin" "$count" 1 >/dev/null
        rclone_bytes=$(($(proxy_bytes) - before))
        rclone_unmount
        sample s2_blocks "$(calc "$fpfs_bytes / ($count * $block_bytes)")"
        sample s2_vs_rclone "$(calc "$fpfs_bytes / $rclone_bytes")"
        log "S2 run $run: $count random reads: fpfs $fpfs_bytes bytes, rclone $rclone_bytes bytes from the server"
    done
    kill "$proxy_pid" 2>/dev/null || true
    row "S2 random 4 KiB reads, $big_mib MiB object, 1 job" "server bytes per read, in 64 KiB blocks" s2_blocks "≤ 4" "<=" 4
    row "S2 same" "server bytes ÷ rclone mount (cache off)'s" s2_vs_rclone "≤ 0.1" "<=" 0.1
}
# Body bytes the S2 proxy has sent so far (its log has a line per answer: method, path, status,
# bytes).
proxy_bytes() { sleep 0.3; awk '{ s += $4 } END { printf "%.0f\n", s }' "$work/s3-proxy.log"; }

# S3: B6 on the bucket: ls -lR of the tree's keys, cold (a fresh mount each), against rclone mount
# (cache off), which asks a HEAD per object for its modification time, and s3fs.
bench_s3() {
    local run fpfs_s rclone_s s3fs_s s3fs_note keys=$((dirs * per_dir + flat)) stopped=0
    for ((run = 1; run <= repetitions; run++)); do
        s3_fpfs_mount "$s3_url"
        fpfs_s=$(seconds ls -lR "$work/mnt/tree")
        fpfs_unmount
        s3_rclone_mount off "$s3_url"
        rclone_s=$(seconds ls -lR "$work/rclone-mnt/tree")
        rclone_unmount
        s3fs_mount
        s3fs_s=$(seconds timeout "$s3fs_limit" ls -lR "$work/s3fs-mnt/tree")
        s3fs_note=""
        if awk -v s="$s3fs_s" -v l="$s3fs_limit" 'BEGIN { exit !(s >= l) }'; then
            stopped=$((stopped + 1))
            s3fs_note=" (stopped at the limit)"
        fi
        s3fs_unmount
        sample s3_rclone "$(calc "$rclone_s / $fpfs_s")"
        sample s3_s3fs "$(calc "$s3fs_s / $fpfs_s")"
        log "S3 run $run, ls -lR of $keys keys, cold: fpfs ${fpfs_s}s, rclone ${rclone_s}s, s3fs ${s3fs_s}s$s3fs_note"
    done
    row "S3 ls -lR of $keys keys, cold" "rclone mount (cache off) time ÷ fpfs time" s3_rclone "≥ 10" ">=" 10
    if ((stopped)); then
        row "S3 same" "s3fs time ÷ fpfs time, $stopped of $repetitions runs stopped at ${s3fs_limit} s (at least this)" s3_s3fs "-" ">=" 0
    else
        row "S3 same" "s3fs time ÷ fpfs time" s3_s3fs "-" ">=" 0
    fi
}

# S4: B10's big write on the bucket, until on the server, against curl's signed PUT.
bench_s4() {
    local run curl_s app_s sync_s
    for ((run = 1; run <= repetitions; run++)); do
        curl_s=$(seconds s3curl -T "$work/s3-big.bin" "$s3_url/bench/writes/curl-big" -o /dev/null)
        s3_delete writes/curl-big
        s3_fpfs_mount "$s3_url"
        mkdir -p "$work/mnt/writes"
        app_s=$(seconds dd if="$work/s3-big.bin" of="$work/mnt/writes/big" bs=1M conv=fsync status=none)
        sync_s=$(seconds "$fpfs" sync "$work/mnt" --timeout 3600)
        fpfs_unmount
        s3curl -o "$work/s3-curl/back" "$s3_url/bench/writes/big"
        same_bytes "$work/s3-curl/back" "$work/s3-big.bin" "S4: the server's copy of writes/big"
        rm -f "$work/s3-curl/back"
        s3_delete writes/big
        sample s4_remote "$(calc "($app_s + $sync_s) / $curl_s")"
        log "S4 run $run: fpfs ${app_s}s + sync ${sync_s}s, curl ${curl_s}s"
    done
    row "S4 $big_mib MiB write + fsync, until on the server" "fpfs (write + fpfs sync) ÷ signed curl -T" s4_remote "≤ 1.1" "<=" 1.1
}

# --- run ----------------------------------------------------------------------------------------

big_gib="$(calc "$big_mib / 1024")"
started=$(now)
for benchmark in B1 B2 B3 B5 B6 B7 B8 B10 S1 S2 S3 S4; do
    if wants $benchmark; then
        log "$benchmark"
        section_started=$(now)
        "bench_${benchmark,,}"
        log "$benchmark took $(calc "int($(now) - $section_started)") s"
    fi
done

# --- table --------------------------------------------------------------------------------------
machine="$(date -u '+%Y-%m-%d %H:%M UTC'); $(nproc) cores, $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg); Apache $(/usr/sbin/apache2 -v | sed -n 's/.*Apache\/\([^ ]*\).*/\1/p'), rclone $(rclone version | head -1 | cut -d' ' -f2); $repetitions repetitions$( ((quick)) && echo ', --quick'); $only in $(calc "int(($(now) - $started) / 60)") min"
# The run's raw figures, every sample of every row, as a data file beside the docs (DECISIONS 164).
data="docs/benchmarks/$(date -u +%Y-%m-%dT%H%M)-$(git rev-parse --short HEAD 2>/dev/null || echo unknown).json"
mkdir -p docs/benchmarks
python3 - "$work" "$machine" "$(git rev-parse HEAD 2>/dev/null || echo unknown)" "$quick" >"$data" <<'PY'
import json, os, sys
work, machine, commit, quick = sys.argv[1:5]
rows = []
if os.path.exists(f"{work}/rows.tsv"):
    for line in open(f"{work}/rows.tsv", encoding="utf-8"):
        name, reference, series, goal, holds = line.rstrip("\n").split("\t")
        path = f"{work}/samples.{series}"
        samples = [float(v) for v in open(path)] if os.path.exists(path) else []
        rows.append({"benchmark": name, "reference": reference, "samples": samples, "goal": goal, "holds": holds})
json.dump({"commit": commit, "machine": machine, "quick": quick == "1", "rows": rows}, sys.stdout, indent=1, ensure_ascii=False)
PY
log "raw figures: $data"
echo
echo "$machine"
echo
echo "| benchmark | reference | ratio: median (min-max) | goal | holds |"
echo "|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
exit
}
