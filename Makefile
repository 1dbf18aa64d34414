# traceidx: two commands do all set-up on a fresh Debian 12 machine: `make demo` and `make test`.
BUILD      ?= build
SAN_BUILD  ?= build-sanitize
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 300
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
PREFIX     ?= /usr/local
SOURCES     = $(wildcard core/*.[ch] index/*/*.[ch] tools/*.[ch] tools/serve/*.[ch] bench/*.[ch] tests/unit/*.[ch] tests/fuzz/*.[ch] tests/install/*.[ch])

.PHONY: all deps configure build demo test test-browser test-sanitize fuzz bench install uninstall man format lint clean

all: build

deps:
	@scripts/deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)

demo: build
	@scripts/demo.sh $(BUILD)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# serve's pages in headless Chromium: Debian's chromium and golang-1.19-src (Go's timeline viewer),
# and puppeteer-core from npm (tests/browser); screenshots in $(BUILD)/tests/browser-shots
test-browser: build
	@scripts/deps.sh browser
	@cd $(BUILD) && ctest --output-on-failure -j $(JOBS) -R '^browser\.'

test-sanitize: deps
	@cmake -S . -B $(SAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DTDX_SANITIZE=ON >/dev/null
	@cmake --build $(SAN_BUILD) -j $(JOBS)
	@cd $(SAN_BUILD) && TRACEIDX_SANITIZE=1 ctest --output-on-failure -j $(JOBS)

# libFuzzer (clang) over traces and indexes, FUZZ_SECONDS each: tests/fuzz/README.md
fuzz:
	@scripts/deps.sh fuzz
	@CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTDX_FUZZ=ON >/dev/null
	@cmake --build $(FUZZ_BUILD) -j $(JOBS) --target traceidx fuzz_trace fuzz_index replay_trace replay_index
	@scripts/fuzz.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

bench: build
	@bench/run $(BUILD)

# The binary, its man page and bash completion, and libtraceidx (docs/api.md), under PREFIX:
# `make install PREFIX=$$HOME/.local`, `make install DESTDIR=/tmp/stage PREFIX=/usr`.
# `make uninstall` (with the same DESTDIR) removes what the last install listed in
# $(BUILD)/install_manifest.txt.
install: build
	@DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"

uninstall:
	@DESTDIR="$(DESTDIR)" cmake -DMANIFEST=$(BUILD)/install_manifest.txt -P scripts/uninstall.cmake

# docs/traceidx.1 and scripts/traceidx.bash from the built binary's --help (the tests docs.man
# and docs.completion check that they agree with it)
man: build
	@scripts/gen_cli_docs.py $(BUILD)/tools/traceidx --man docs/traceidx.1 --completion scripts/traceidx.bash

format:
	@clang-format -i $(SOURCES)

lint: build
	@clang-tidy --quiet -p $(BUILD) $(filter %.c,$(SOURCES)) 2>/dev/null
	@cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
	    --inline-suppr --std=c11 -I . --suppress=missingIncludeSystem $(filter %.c,$(SOURCES))

clean:
	@rm -rf $(BUILD) $(SAN_BUILD) $(FUZZ_BUILD)
