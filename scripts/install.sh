#!/usr/bin/env bash
# Installs fpfs as a Linux tool: the binary in PREFIX/sbin with its mount(8) helpers beside it
# (mount.fpfs for `mount -t fpfs` and fstab lines of type fpfs, mount.fuse.fpfs for
# `-t fuse.fpfs`), links to those in /sbin (where mount(8) looks for helpers), the man page
# fpfs(1) and the bash and zsh completions. Run as root.
#
#   scripts/install.sh [--prefix /usr/local] [--binary PATH] [--destdir DIR]
#
# Without --binary it builds a release binary first (swift build -c release). --destdir puts
# everything under DIR instead of / (for packaging, and for the test that checks this script).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
prefix=/usr/local
binary=""
destdir=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --prefix) prefix="$2"; shift 2 ;;
        --binary) binary="$2"; shift 2 ;;
        --destdir) destdir="$2"; shift 2 ;;
        *) echo "install.sh: unknown argument '$1' (known: --prefix, --binary, --destdir)" >&2; exit 2 ;;
    esac
done

if [[ -z "$binary" ]]; then
    (cd "$repo_root" && swift build -c release --product fpfs)
    binary="$(cd "$repo_root" && swift build -c release --show-bin-path)/fpfs"
fi
[[ -x "$binary" ]] || { echo "install.sh: no fpfs binary at $binary" >&2; exit 1; }

sbin="$destdir$prefix/sbin"
install -D -m 0755 "$binary" "$sbin/fpfs"
for helper in mount.fpfs mount.fuse.fpfs; do
    ln -sfn fpfs "$sbin/$helper"
    # mount(8) runs helpers from /sbin only (/sbin is /usr/sbin on a merged-/usr system).
    mkdir -p "$destdir/sbin"
    if [[ "$prefix/sbin" != /sbin && "$prefix/sbin" != /usr/sbin ]]; then
        ln -sfn "$prefix/sbin/fpfs" "$destdir/sbin/$helper"
    fi
done

install -D -m 0644 "$repo_root/docs/man/fpfs.1" "$destdir$prefix/share/man/man1/fpfs.1"

completions="$destdir$prefix/share/bash-completion/completions"
zsh_functions="$destdir$prefix/share/zsh/site-functions"
mkdir -p "$completions" "$zsh_functions"
"$sbin/fpfs" --generate-completion-script bash >"$completions/fpfs"
"$sbin/fpfs" --generate-completion-script zsh >"$zsh_functions/_fpfs"

echo "installed $("$sbin/fpfs" --version) in $destdir$prefix (mount -t fpfs works through /sbin/mount.fpfs)"
