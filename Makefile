# The two commands a new user needs: `make run` and `make test`.
# Both install missing Debian packages first, then build with CMake + Ninja
# (ccache when present).
BUILD_DIR ?= build
BUILD_TYPE ?= Release
CONFIG ?= examples/demo.yaml
JOBS ?= $(shell nproc)

.PHONY: all deps configure build run test test-asan test-tsan fuzz fuzz-build bench chaos soak package clean

# ccache: paths relative to the checkout, so a fresh clone elsewhere (CI)
# still hits the cache. (No precompiled headers: ccache cannot cache the
# files that use one, and a warm cache beats a PCH on every rebuild.)
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_MAXSIZE ?= 5G
comma := ,

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	  -DCMAKE_CXX_COMPILER_LAUNCHER=$$(command -v ccache || true)

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

run: build
	$(BUILD_DIR)/arbiter --config $(CONFIG)

# Twice as many test jobs as cores: the integration tests mostly wait on
# real processes and timers; a CPU-bound test takes two jobs
# (tests/CMakeLists.txt, ARBITER_CPU_BOUND).
TEST_JOBS ?= $(shell echo $$(( $(JOBS) * 2 )))

# The live-vs-virtual agreement check (ctest label `timing`) compares
# latencies of two runs: it belongs with the benchmarks, not in a pass/fail
# suite on a shared machine. `make bench` runs it (bench/scenarios.sh, which
# also puts its table in docs/benchmarks.md and fails when it disagrees);
# `ctest -L timing` runs it alone.
test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(TEST_JOBS) -LE timing

# The suites of `make test` in a sanitized build tree of its own, without
# tcmalloc: $(call sanitized_suites,DIR,SANITIZE,EXTRA_CXXFLAGS,RUNTIME_ENV).
# The chaos drills and the live smoke are left out: they check latencies a
# sanitized build does not keep; so are the Debian package, which ships the
# Release build, the systemd unit's check, which traces the Release binary's
# system calls with strace for the unit's filter (a sanitized binary makes
# others, and LeakSanitizer aborts under ptrace). The fuzz replays run here
# too: every committed seed and its mutants under the sanitizers.
define sanitized_suites
	cmake -S . -B $(1) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DARBITER_TCMALLOC=OFF \
	  -DCMAKE_CXX_COMPILER_LAUNCHER=$$(command -v ccache || true) \
	  "-DCMAKE_CXX_FLAGS=$(strip $(2) -fno-omit-frame-pointer $(3))" \
	  "-DCMAKE_EXE_LINKER_FLAGS=$(2)"
	cmake --build $(1) -j $(JOBS)
	$(4) ctest --test-dir $(1) --output-on-failure -j $(JOBS) -LE timing \
	  -E 'arbiter_chaos_short|arbiter_bench_live_smoke|deploy_debian_package|deploy_systemd_unit'
endef

# AddressSanitizer + LeakSanitizer + UndefinedBehaviorSanitizer (issue 16;
# docs/security.md).
ASAN_DIR ?= build-asan
test-asan: deps
	$(call sanitized_suites,$(ASAN_DIR),-fsanitize=address$(comma)undefined,-fno-sanitize-recover=undefined,\
	  ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1)

# The Debian package (CPack; deploy/package/, docs/deployment.md):
# build/arbiter_<version>_<arch>.deb. `make test` builds one in a temp dir
# and runs it (ctest deploy_debian_package).
package: build
	cd $(BUILD_DIR) && cpack -G DEB

# ThreadSanitizer over the same suites (issue 16; docs/security.md): the
# gateway runs several I/O threads, the dispatcher's mutex and the metrics
# registry's atomics.
TSAN_DIR ?= build-tsan
test-tsan: deps
	$(call sanitized_suites,$(TSAN_DIR),-fsanitize=thread,,TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1)

# libFuzzer harnesses (fuzz/; docs/security.md, "Fuzzing"): a tree of their
# own (build-fuzz, GCC with ASan, UBSan and coverage, Debian's libFuzzer).
# `make fuzz` builds it, runs the core's unit tests under both sanitizers
# (unit_tests_sanitized), then each harness for FUZZ_SECONDS in turn (or
# FUZZ_RUNS executions if that comes first), FUZZ_NAMES to pick some.
# `make test` replays the committed seeds and fixed mutants of them through
# each harness in the normal build (ctest fuzz_replay_*).
FUZZ_DIR ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_NAMES ?=
fuzz-build: deps
	JOBS=$(JOBS) bash fuzz/run.sh build $(FUZZ_DIR)

fuzz: fuzz-build
	ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(FUZZ_DIR)/fuzz/unit_tests_sanitized
	bash fuzz/run.sh run $(FUZZ_DIR) $(FUZZ_SECONDS) $(FUZZ_NAMES)

bench: build
	bash bench/run_all.sh $(BUILD_DIR)

# The chaos drills of issue 15 at full length (~5 minutes): faults injected
# into real arbiter-sim processes behind the gateway; the table goes into
# docs/benchmarks.md. `make test` runs a short form (ctest arbiter_chaos_short).
chaos: build
	bash bench/chaos.sh --doc $(BUILD_DIR)

# Soak and leak check (issue 16; docs/benchmarks.md, "Soak"): 30 minutes of
# mixed traffic with cycling upstream faults; the gateway's RSS, fds and
# in-flight gauges must come back to the baseline. Not part of `make test`.
SOAK_MINUTES ?= 30
soak: build
	nice -n 10 bash bench/soak.sh --minutes $(SOAK_MINUTES) $(BUILD_DIR)

clean:
	rm -rf $(BUILD_DIR)
