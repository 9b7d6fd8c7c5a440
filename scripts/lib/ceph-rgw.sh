#!/usr/bin/env bash
# Runs a one-node Ceph cluster with a RADOS Gateway (S3) on 127.0.0.1, for the S3 tests and the
# bench: a real distributed object store, started and stopped by the project itself.
#
#   scripts/lib/ceph-rgw.sh STATE_DIR [PORT]
#
# Every path (configuration, mon store, OSD, sockets, logs) lies in STATE_DIR, which must be empty
# or missing. The OSD keeps objects in RAM (memstore): nothing is written to the shared disk but
# the mon's store. The gateway also serves https on a second port, with a certificate for
# 127.0.0.1 signed by a test CA made here (STATE_DIR/tls/ca.pem; trusted by nothing on the system).
# Once the gateway answers and the S3 user exists, the script writes `https://127.0.0.1:TLS_PORT`
# to STATE_DIR/https-endpoint, prints `http://127.0.0.1:PORT` on stdout, writes it to
# STATE_DIR/endpoint, and waits; SIGTERM or
# SIGINT stops every daemon it started, by pid, and it exits. Run it in a process group of its
# own (setsid) to be able to stop the whole group at once, as the Swift test helper does.
#
# The S3 user is `fpfs-test` with the access key and secret key below (test-only values).
#
# What the settings are for (measured with Ceph 16.2 on Debian 12, issue 52): radosgw cannot reach a
# mon with `auth = none` unless `ms mon client mode = crc secure`; a paxos propose interval of
# 0.05 s brings start-up from ~14 s to ~2.5 s; without `tcp_nodelay=1` small GETs wait ~40 ms for
# Nagle; the mon's free-space warnings are lowered because the disk is shared; one OSD needs pools
# of size 1.

set -euo pipefail

FPFS_RGW_ACCESS_KEY="fpfs-test-access-key"
FPFS_RGW_SECRET_KEY="fpfs-test-secret-key-0123456789abcdef"

# A free TCP port on 127.0.0.1, as the kernel picks it.
fpfs_rgw_free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# fpfs_rgw_certificates DIR: a test CA (DIR/ca.pem) and a certificate for 127.0.0.1 and localhost
# it signed (DIR/server.pem, DIR/server.key), valid for two days.
fpfs_rgw_certificates() {
    local dir="$1"
    mkdir -p "$dir"
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=fpfs test CA" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
        -keyout "$dir/ca.key" -out "$dir/ca.pem" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$dir/server.key" \
        -out "$dir/server.csr" 2>/dev/null
    printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" "basicConstraints=CA:FALSE" \
        "extendedKeyUsage=serverAuth" >"$dir/server.ext"
    openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial -days 2 \
        -extfile "$dir/server.ext" -out "$dir/server.pem" 2>/dev/null
}

fpfs_rgw_main() {
    local state="$1" port="${2:-}"
    [[ -n "$state" ]] || { echo "usage: ceph-rgw.sh STATE_DIR [PORT]" >&2; return 2; }
    for tool in monmaptool ceph-mon ceph-osd radosgw radosgw-admin ceph openssl; do
        command -v "$tool" >/dev/null || {
            echo "ceph-rgw: $tool is missing (apt-get install --no-install-recommends ceph-mon ceph-osd radosgw ceph-common)" >&2
            return 1
        }
    done
    mkdir -p "$state"
    state="$(cd "$state" && pwd)"
    if [[ -n "$(ls -A "$state")" ]]; then
        echo "ceph-rgw: $state is not empty" >&2
        return 1
    fi
    [[ -n "$port" ]] || port="$(fpfs_rgw_free_port)"
    local mon_port tls_port fsid osd_uuid conf="$state/ceph.conf"
    mon_port="$(fpfs_rgw_free_port)"
    tls_port="$(fpfs_rgw_free_port)"
    fpfs_rgw_certificates "$state/tls"
    fsid="$(cat /proc/sys/kernel/random/uuid)"
    osd_uuid="$(cat /proc/sys/kernel/random/uuid)"
    mkdir -p "$state/run" "$state/log" "$state/mon" "$state/osd" "$state/rgw"
    cat >"$conf" <<EOF
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$mon_port
public addr = 127.0.0.1
auth cluster required = none
auth service required = none
auth client required = none
auth supported = none
run dir = $state/run
admin socket = $state/run/\$name.asok
log file = $state/log/\$name.log
pid file = $state/run/\$name.pid
keyring = /dev/null
ms bind ipv6 = false
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon warn on pool no redundancy = false
mon data avail warn = 2
mon data avail crit = 1
paxos propose interval = 0.05
[mon]
mon data = $state/mon
[osd]
osd data = $state/osd
osd objectstore = memstore
memstore device bytes = 17179869184
osd max object size = 1073741824
[client]
ms mon client mode = crc secure
[client.rgw]
rgw frontends = beast endpoint=127.0.0.1:$port ssl_endpoint=127.0.0.1:$tls_port ssl_certificate=$state/tls/server.pem ssl_private_key=$state/tls/server.key tcp_nodelay=1
rgw data = $state/rgw
rgw dns name = 127.0.0.1
EOF
    local -a pids=()
    fpfs_rgw_stop() {
        trap - TERM INT EXIT
        local pid
        # SIGKILL: the cluster is thrown away, and a memstore OSD told to stop first writes every
        # object it holds to its data folder.
        for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
        for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    }
    trap 'fpfs_rgw_stop; exit 0' TERM INT
    trap 'fpfs_rgw_stop' EXIT

    monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$mon_port]" "$state/monmap" >/dev/null
    ceph-mon -c "$conf" --mkfs -i a --monmap "$state/monmap" >/dev/null
    ceph-mon -c "$conf" -i a -f >>"$state/log/stderr.log" 2>&1 &
    pids+=($!)
    local osd_id
    osd_id="$(ceph -c "$conf" osd new "$osd_uuid")"
    ceph-osd -c "$conf" -i "$osd_id" --mkfs --osd-uuid "$osd_uuid" >>"$state/log/stderr.log" 2>&1
    ceph-osd -c "$conf" -i "$osd_id" -f >>"$state/log/stderr.log" 2>&1 &
    pids+=($!)
    radosgw -c "$conf" -n client.rgw -f >>"$state/log/stderr.log" 2>&1 &
    pids+=($!)
    local endpoint="http://127.0.0.1:$port" tries=0
    until curl -s -o /dev/null "$endpoint/"; do
        tries=$((tries + 1))
        if ((tries > 600)); then
            echo "ceph-rgw: the gateway did not answer on $endpoint within 60 s; see $state/log" >&2
            return 1
        fi
        for pid in "${pids[@]}"; do
            kill -0 "$pid" 2>/dev/null || {
                echo "ceph-rgw: a daemon exited; see $state/log" >&2
                tail -5 "$state/log/stderr.log" >&2
                return 1
            }
        done
        sleep 0.1
    done
    radosgw-admin -c "$conf" -n client.admin user create --uid fpfs-test --display-name fpfs-test \
        --access-key "$FPFS_RGW_ACCESS_KEY" --secret-key "$FPFS_RGW_SECRET_KEY" >/dev/null
    printf '%s\n' "https://127.0.0.1:$tls_port" >"$state/https-endpoint"
    printf '%s\n' "$endpoint" >"$state/endpoint"
    printf '%s\n' "$endpoint"
    # Waits in the background so that a signal runs the trap at once.
    while true; do
        sleep 3600 &
        wait $! || true
    done
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    fpfs_rgw_main "$@"
fi
