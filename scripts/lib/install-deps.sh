#!/usr/bin/env bash
# Installs what fpfs needs to build, mount and test on Debian 12, and nothing that is already there.
# Sourced by scripts/test.sh and scripts/mount.sh (which then call fpfs_install_deps); running it
# directly does the same. Needs root only when something is missing.

# Debian packages: libfuse3 and its headers (CFuse), fusermount3 (fuse3), pkg-config (finds fuse3),
# SQLite headers (GRDB), getfattr (attr), sqlite3, the ordinary tools the mount tests drive;
# python3, which runs the fake WebDAV servers of the tests (Tests/TestServers/*.py); man-db, whose
# man -l renders the generated man page in a test;
# the real WebDAV servers the tests start: Apache (apache2-bin only: the apache2 package would
# start a system service on port 80; apache2-utils for htpasswd; openssl for the certificates of
# the TLS tests) and rclone; curl for the benchmarks' baseline and s3fs for their S3 rows; the tools the write tests run
# through the mount (rsync, tar, fio, stress-ng); the one-node Ceph cluster with a RADOS Gateway
# that the S3 tests start (scripts/lib/ceph-rgw.sh: mon, OSD, radosgw, and the ceph and
# radosgw-admin tools; no mgr, and the packages start nothing).
FPFS_APT_PACKAGES=(
    fuse3 libfuse3-dev pkg-config libsqlite3-dev sqlite3 attr
    coreutils findutils util-linux git ca-certificates python3 man-db
    apache2-bin apache2-utils openssl rclone curl s3fs
    rsync tar fio stress-ng
    ceph-mon ceph-osd radosgw ceph-common
)

# Prints the packages of FPFS_APT_PACKAGES that dpkg does not report as installed.
fpfs_missing_packages() {
    local pkg
    for pkg in "${FPFS_APT_PACKAGES[@]}"; do
        if [[ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)" != "install ok installed" ]]; then
            printf '%s\n' "$pkg"
        fi
    done
}

# Installs the missing packages quietly (one apt-get update, only if needed) and checks for the
# two things apt cannot provide: a Swift toolchain on PATH and the /dev/fuse device.
fpfs_install_deps() {
    local -a missing
    mapfile -t missing < <(fpfs_missing_packages)
    if ((${#missing[@]} > 0)); then
        if ((EUID != 0)); then
            echo "fpfs: missing packages: ${missing[*]} (run as root, or install them with apt-get)" >&2
            return 1
        fi
        echo "fpfs: installing ${missing[*]}" >&2
        DEBIAN_FRONTEND=noninteractive apt-get update -qq </dev/null >/dev/null
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            "${missing[@]}" </dev/null >/dev/null
    fi
    if ! command -v swift >/dev/null 2>&1; then
        echo "fpfs: swift not found on PATH: install Swift 6.x for Debian 12 (https://www.swift.org/install/linux/)" >&2
        return 1
    fi
    if [[ ! -c /dev/fuse ]]; then
        if command -v modprobe >/dev/null 2>&1; then
            modprobe fuse 2>/dev/null || true
        fi
        if [[ ! -c /dev/fuse ]]; then
            echo "fpfs: /dev/fuse is missing: load the fuse kernel module (modprobe fuse) or, in a container, pass --device /dev/fuse" >&2
            return 1
        fi
    fi
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    set -euo pipefail
    fpfs_install_deps
fi
