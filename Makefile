# The two commands of the README:
#   make run    install what is missing, build, serve on local:./idkeeper-data at 127.0.0.1:8080
#   make test   install what is missing, check the format and the lint, build, run the whole
#               suite, each test once: the ones ASan cannot run (nosan) and the duplicate-ID
#               ones that depend on real speed (release) on the plain build, every other
#               under ASan+UBSan, the threaded unit tests under TSan (docs/testing.md)
# Habits: make build | asan | tsan | tsan-mt | fuzz | bench | format | format-check | lint | docs | install | deb | clean
#         test-plain | test-asan-all | test-tsan-all: the whole suite on one build (not in make test)
#         test-under-load: make test with one busy process per core beside it
BUILD ?= build
JOBS ?= $(shell nproc)
# Tests run 3 per core: most of them sleep, wait on timeouts and on each other; the
# few that keep cores busy say "# processors: 2" (tests/CMakeLists.txt).
TEST_JOBS ?= $(shell echo $$(( $$(nproc) * 3 )))
CMAKE_FLAGS ?=
WERROR ?= $(if $(CI),ON,OFF)
HTTP ?= 127.0.0.1:8080
DATA ?= ./idkeeper-data
DEB_OUT ?= build-deb

.PHONY: all build build-release run deb test test-under-load format-check test-plain test-release test-asan test-asan-unit test-asan-all test-tsan test-tsan-all asan tsan tsan-mt fuzz fuzz-run bench format lint lint-cppcheck lint-tidy lint-rules install clean deps deps-test deps-bench chaos docs

all: build

deps:
	@scripts/install-deps.sh build

deps-test:
	@scripts/install-deps.sh test

deps-bench:
	@scripts/install-deps.sh bench

# ctest as every suite target runs it: failing tests' output shown, TEST_JOBS at once
CTEST = ctest --output-on-failure -j$(TEST_JOBS) --timeout 600

# Ninja: less CPU than make's recursion (a build directory made before keeps its own)
$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIK_WERROR=$(WERROR) $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS) $(if $(BUILD_TARGET),--target $(BUILD_TARGET))

# builds the daemon alone: on a fresh clone the rest of the tree (the tests, the fuzz
# replays, the benchmarks) would double the wait for the first ID
run: deps
	@$(MAKE) --no-print-directory build BUILD_TARGET=idkeeper
	$(BUILD)/idkeeper serve --coord local:$(DATA) --http $(HTTP)

# The steps, each timed (docs/testing.md keeps the figures), are in scripts/make-test.sh:
# the test suite's packages install in the background while the format check, the
# lint and the builds run; the test stages then run one after the other (both keep
# the two cores busy, and side by side they took longer: docs/testing.md).
test:
	@MAKE="$(MAKE)" scripts/make-test.sh

# `make test` with one busy process per core beside it, from its first step to its end
# (IK_TEST_LOAD, scripts/make-test.sh): a test that waits on time, not on its
# condition, fails here (docs/testing.md, "A busy machine"). Not what CI runs.
test-under-load:
	@IK_TEST_LOAD=$$(nproc) MAKE="$(MAKE)" scripts/make-test.sh

# The whole suite on the plain (release) build: not in `make test`, which runs each
# test once, on the build that checks it best (2 cores: the whole suite on two builds
# would take CI past 25 minutes).
# ctest shows only failing tests' output; the chaos run's seed, counts and faults are
# worth seeing in every CI log, so they are printed after a passing run too.
test-plain: build
	cd $(BUILD) && $(CTEST)
	@grep -h '^chaos:' $(BUILD)/Testing/Temporary/LastTest.log || true

# `make test`'s plain stage: the tests ASan cannot run (nosan: the packaging, the man
# pages, the tree's structure, chaos) and the ones whose point is the release build's
# real speed (release: kill -9, SIGSTOP past the lease, clock steps, store outages).
test-release: build-release
	cd $(BUILD) && $(CTEST) -L '^(nosan|release)$$'
	@grep -h '^chaos:' $(BUILD)/Testing/Temporary/LastTest.log || true

# What the plain stage runs and nothing more: the product and the test tools, not the
# unit tests, fuzz replays and benchmarks (release_stage in tests/CMakeLists.txt).
build-release:
	@$(MAKE) --no-print-directory BUILD_TARGET=release_stage build

# ASan+UBSan: every test but those of the plain stage, daemons and CLI included
# (ASAN_EXCLUDE: the labels it leaves out; make test runs the unit tests first, with
# test-asan-unit, while the test packages install: scripts/make-test.sh).
ASAN_EXCLUDE ?= ^(nosan|release)$$
test-asan: asan
	cd build-asan && $(CTEST) -LE '$(ASAN_EXCLUDE)'

test-asan-unit: asan
	cd build-asan && $(CTEST) -L '^unit$$'

# ASan+UBSan over the whole suite, the release tests too (their failure paths' memory
# checks, at the smaller volumes IK_SANITIZE selects): not in `make test`, whose
# release tests run on the plain build; run it before a release (docs/testing.md).
test-asan-all: asan
	cd build-asan && $(CTEST) -LE '^nosan$$'

# TSan: the multithreaded unit tests, which run on local: alone. Their own build
# directory holds just them, without the store backends: a sixth of the CPU of a
# whole TSan build (make tsan, for test-tsan-all).
TSAN_MT_FLAGS = -DIK_SANITIZE=thread -DIK_BACKENDS_DEFAULT=OFF
tsan-mt:
	@$(MAKE) --no-print-directory BUILD=build-tsan-mt CMAKE_FLAGS="$(TSAN_MT_FLAGS)" BUILD_TARGET=threads_tests build

test-tsan: tsan-mt
	cd build-tsan-mt && ctest --output-on-failure -j$(JOBS) --timeout 600 -L threads

# TSan over the whole suite, daemons included (not in `make test`: it would take CI
# past its 20 minutes). Excludes nosan and notsan (libfaketime's interposed clock
# and condvar calls confuse TSan's own interceptors).
test-tsan-all: tsan
	cd build-tsan && TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1" ctest --output-on-failure -j$(JOBS) --timeout 900 -LE 'nosan|notsan'

asan:
	@$(MAKE) --no-print-directory BUILD=build-asan CMAKE_FLAGS="-DIK_SANITIZE=address,undefined" build

tsan:
	@$(MAKE) --no-print-directory BUILD=build-tsan CMAKE_FLAGS="-DIK_SANITIZE=thread" build

fuzz: deps-test
	@$(MAKE) --no-print-directory BUILD=build-fuzz CMAKE_FLAGS="-DIK_FUZZ=ON -DCMAKE_C_COMPILER=clang -DIK_SANITIZE=address,undefined" build

# make fuzz-run FUZZ_SECONDS=600: every fuzzer for that long, corpus in tests/fuzz/corpus
fuzz-run: fuzz
	tests/fuzz/run-all.sh build-fuzz $(or $(FUZZ_SECONDS),60)

bench: deps-bench build
	bench/run-all.sh $(BUILD)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

# The docs written from the code: docs/configuration.md's store options, from the
# backends' tables (the test structure fails while they differ).
docs:
	/usr/bin/python3 tests/tools/docs_code.py --write .

# Every tracked C file as the repo's .clang-format wants it (make format fixes it).
format-check:
	@files=$$(git ls-files '*.c' '*.h') && [ -n "$$files" ] || { echo "format-check: no tracked C files (not a git checkout?)"; exit 1; }; \
	clang-format --dry-run -Werror $$files && echo "format-check: $$(echo $$files | wc -w) files clean"

# cppcheck, then clang-tidy with the checks of .clang-tidy (any finding fails: its
# WarningsAsErrors); a configured build directory is enough (compile_commands.json).
# LINT_ANALYZER=no leaves out the clang-analyzer-* checks: make test does, since they
# cost about 4 minutes of CPU over the tree (the rest: about 10 s); run `make lint`
# for the whole of it.
LINT_ANALYZER ?= yes
# lint: cppcheck (which needs no build directory), clang-tidy (which reads the
# build's compile_commands.json) and promtool on the shipped alert rules
lint: lint-cppcheck lint-tidy lint-rules

# The Prometheus alert rules that ship with the package (dist/prometheus/,
# docs/operations.md); promtool comes with Debian's prometheus (install-deps.sh test).
lint-rules:
	@command -v promtool >/dev/null || { echo "lint-rules: no promtool (apt-get install prometheus, or scripts/install-deps.sh test)"; exit 1; }
	promtool check rules dist/prometheus/idkeeper.rules.yml

lint-cppcheck:
	cppcheck -j$(JOBS) --quiet --enable=warning,performance,portability --inline-suppr --error-exitcode=1 -Iinclude $(addprefix -I,$(shell find src/lib src/server -type d)) src include

lint-tidy: $(BUILD)/CMakeCache.txt
	@files=$$(git ls-files 'src/*.c') && [ -n "$$files" ] || { echo "lint: no tracked C files (not a git checkout?)"; exit 1; }; \
	echo "clang-tidy: $$(echo $$files | wc -w) files, $(JOBS) at a time$(if $(filter no,$(LINT_ANALYZER)), (without clang-analyzer-*))"; \
	rc=0; printf '%s\n' $$files | xargs -P$(JOBS) -n1 clang-tidy -p $(BUILD) --quiet --extra-arg=-Wno-unknown-warning-option $(if $(filter no,$(LINT_ANALYZER)),'--checks=-clang-analyzer-*') >$(BUILD)/clang-tidy.log 2>&1 || rc=$$?; \
	grep -v '^[0-9]* warnings\? generated\.$$' $(BUILD)/clang-tidy.log; \
	if [ $$rc -ne 0 ]; then echo "clang-tidy: findings above (.clang-tidy says which checks and why)"; exit 1; fi; \
	echo "clang-tidy: clean"

# make chaos CHAOS_ARGS="--duration 1800 --seed 42": the chaos run (docs/RELIABILITY.md)
chaos: deps-test build
	IK_BIN=$(BUILD)/idkeeper IK_BUILD=$(BUILD) tests/chaos/chaos.sh $(CHAOS_ARGS)

install: build
	cmake --install $(BUILD)

# The Debian packages idkeeper, libidkeeper1 and libidkeeper-dev, built by
# dpkg-buildpackage in a copy of the tree under $(DEB_OUT) and checked by lintian
# (scripts/make-deb.sh). DEB_BUILD_OPTIONS=nocheck skips the unit tests.
deb:
	@scripts/install-deps.sh deb
	JOBS=$(JOBS) scripts/make-deb.sh $(DEB_OUT)

clean:
	rm -rf build build-asan build-tsan build-tsan-mt build-fuzz build-deb
