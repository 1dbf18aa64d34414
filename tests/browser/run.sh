#!/bin/sh
# ctest's browser.CHECK: runs serve_test.js CHECK TRACEIDX WORKDIR in headless Chromium, or
# prints SKIP and exits 77 when node, Chromium or puppeteer-core (npm ci here) is missing.
here=$(dirname "$0")
command -v node >/dev/null 2>&1 || { echo "SKIP: node not found (make test-browser installs it)"; exit 77; }
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || { echo "SKIP: ${CHROMIUM:-/usr/bin/chromium} not found (make test-browser installs Debian's chromium)"; exit 77; }
[ -d "$here/node_modules/puppeteer-core" ] || { echo "SKIP: $here/node_modules missing (make test-browser runs npm ci there)"; exit 77; }
exec node "$here/serve_test.js" "$@"
