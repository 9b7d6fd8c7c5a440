#!/usr/bin/env bash
# Regenerates docs/man/fpfs.1 from the argument parser (swift-argument-parser's generate-manual
# plugin: every subcommand and option with its help, and the root command's discussion, which
# names the extended attributes). Run after changing a command's options or help; a test
# (TerminalOutputTests) fails when an option of `fpfs mount --help` is missing from the page.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
swift package generate-manual --configuration debug --date "$(git log -1 --format=%cs 2>/dev/null || date +%F)" \
    --authors "the fpfs authors"
page=".build/plugins/GenerateManual/outputs/fpfs/fpfs.1"
mkdir -p docs/man
# A blank line in a discussion is a paragraph break; mdoc wants .Pp there, not an empty line.
sed 's/^$/.Pp/' "$page" >docs/man/fpfs.1
echo "wrote docs/man/fpfs.1"
