#!/bin/sh
# Installs the Debian packages traceidx needs when they are missing (apt-get, as root); with
# `browser`, also what the browser tests need, and their npm package (npm ci in tests/browser).
set -e
PKGS="cmake gcc make python3 liburing-dev libxxhash-dev libcriterion-dev libmicrohttpd-dev"
# `make fuzz` builds with clang and its libFuzzer runtime
[ "${1:-}" = fuzz ] && PKGS="$PKGS clang libclang-rt-14-dev"
# `make test-browser`: headless Chromium, and Go's timeline viewer (in Go's sources) for /trace
[ "${1:-}" = browser ] && PKGS="$PKGS chromium golang-1.19-src"
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
# node and npm may come from elsewhere than Debian (nodesource's nodejs bundles npm): only when
# there is none is Debian's asked for
if [ "${1:-}" = browser ] && ! command -v npm >/dev/null 2>&1; then
    command -v node >/dev/null 2>&1 || missing="$missing nodejs"
    missing="$missing npm"
fi
if [ -n "$missing" ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "traceidx: missing Debian packages:$missing" >&2
        echo "traceidx: run 'make' as root, or install them with: sudo apt-get install$missing" >&2
        exit 1
    fi
    echo "traceidx: installing missing Debian packages:$missing" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq $missing >/dev/null
fi
if [ "${1:-}" = browser ] && [ ! -d "$(dirname "$0")/../tests/browser/node_modules/puppeteer-core" ]; then
    echo "traceidx: installing the browser tests' npm packages (npm ci in tests/browser)" >&2
    # puppeteer-core downloads no browser; the tests drive Debian's chromium
    (cd "$(dirname "$0")/../tests/browser" && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund >/dev/null)
fi
exit 0
