#!/bin/sh
# Installs the Debian packages traceidx needs when they are missing (apt-get, as root).
set -e
PKGS="cmake gcc make python3 liburing-dev libxxhash-dev libcriterion-dev libmicrohttpd-dev"
# `make fuzz` builds with clang and its libFuzzer runtime
[ "${1:-}" = fuzz ] && PKGS="$PKGS clang libclang-rt-14-dev"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
    echo "traceidx: missing Debian packages:$missing" >&2
    echo "traceidx: run 'make' as root, or install them with: sudo apt-get install$missing" >&2
    exit 1
fi
echo "traceidx: installing missing Debian packages:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq $missing >/dev/null
