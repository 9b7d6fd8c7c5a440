#!/usr/bin/env bash
# Mounts a folder with fpfs on a fresh Debian 12 machine (as root): installs the missing apt
# packages, builds the release binary and runs `fpfs mount REMOTE MOUNTPOINT`.
#   scripts/mount.sh [REMOTE] [MOUNTPOINT] [fpfs mount options...]
# REMOTE defaults to a demo folder created with a few sample files, MOUNTPOINT to /mnt/fpfs.
set -euo pipefail

demo_remote=/var/tmp/fpfs-demo-remote

if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
    sed -n '2,5s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
    exit 0
fi

remote="${1:-$demo_remote}"
mountpoint="${2:-/mnt/fpfs}"
shift $(($# < 2 ? $# : 2))

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
# shellcheck source=scripts/lib/install-deps.sh
source scripts/lib/install-deps.sh
fpfs_install_deps

# A small tree to look at: nested folders, text, a symlink and one larger file to watch download.
make_demo_remote() {
    echo "fpfs: creating the demo remote $demo_remote" >&2
    mkdir -p "$demo_remote/docs/notes" "$demo_remote/media"
    printf 'Hello from fpfs.\nThis file was downloaded when you read it.\n' >"$demo_remote/README.txt"
    printf '# Notes\n\nNothing here is local until something reads it.\n' >"$demo_remote/docs/notes/today.md"
    printf 'a,b,c\n1,2,3\n' >"$demo_remote/docs/table.csv"
    : >"$demo_remote/docs/empty.txt"
    head -c $((64 * 1024 * 1024)) /dev/urandom >"$demo_remote/media/sample-64MiB.bin"
    ln -s docs/notes/today.md "$demo_remote/today.md"
}

if [[ "$remote" == "$demo_remote" && ! -e "$demo_remote" ]]; then
    make_demo_remote
fi
if [[ ! -e "$mountpoint" ]]; then
    mkdir -p "$mountpoint"
fi

echo "fpfs: building the release binary (the first build takes several minutes)" >&2
swift build -c release --quiet --product fpfs
fpfs="$(swift build -c release --show-bin-path)/fpfs"

"$fpfs" mount "$remote" "$mountpoint" "$@"

cat <<MSG
fpfs: mounted $remote at $mountpoint
  look:     ls -l $mountpoint; getfattr -d $mountpoint/<file>; du -sh $mountpoint
  status:   $fpfs status $mountpoint
  unmount:  $fpfs unmount $mountpoint    (or: fusermount3 -u $mountpoint)
MSG
