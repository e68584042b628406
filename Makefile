# The two commands of README.md: `make demo` and `make test`. Both install what they need.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?= -DCMAKE_BUILD_TYPE=RelWithDebInfo

.PHONY: all deps build benches demo test unit e2e fuzz sanitize sanitize-thread bench bench-streams bench-visibility bench-store-tail bench-store-format bench-store bench-saturation bench-allocations bench-ui bench-soak format clean

all: build

deps:
	@bash scripts/install-deps.sh

$(BUILD_DIR)/build.ninja: CMakeLists.txt
	cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_FLAGS)

build: deps
	@test -f $(BUILD_DIR)/build.ninja || cmake -S . -B $(BUILD_DIR) -G Ninja $(CMAKE_FLAGS)
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The benches and their tools (bench/CMakeLists.txt), outside the default build.
benches: build
	cmake --build $(BUILD_DIR) -j $(JOBS) --target benches

demo: build
	./$(BUILD_DIR)/infertel demo $(DEMO_ARGS)

unit: build
	cd $(BUILD_DIR) && ctest --output-on-failure -j $(JOBS)

e2e: build
	INFERTEL_BIN=$(abspath $(BUILD_DIR)/infertel) node --test --test-concurrency=1 tests/e2e/

test: build
	bash scripts/run-tests.sh $(BUILD_DIR)

# libFuzzer targets (clang, ASan+UBSan) for every parser of outside input: FUZZ_SECONDS each.
FUZZ_SECONDS ?= 600
fuzz: deps
	bash scripts/fuzz.sh $(FUZZ_SECONDS)

# The unit and end-to-end tests under AddressSanitizer+UndefinedBehaviorSanitizer, and the
# threaded parts' unit tests under ThreadSanitizer (docs/limits.md has the last results).
sanitize: deps
	bash scripts/sanitize.sh address

sanitize-thread: deps
	bash scripts/sanitize.sh thread

bench: benches
	bash bench/run.sh $(BUILD_DIR)

bench-streams: benches
	bash bench/streams_memory.sh $(BUILD_DIR)

bench-visibility: benches
	bash bench/span_visibility.sh $(BUILD_DIR)

bench-allocations: benches
	bash bench/allocations.sh $(BUILD_DIR)

bench-store-tail: benches
	bash bench/store_tail.sh $(BUILD_DIR)

bench-saturation: benches
	bash bench/saturation.sh $(BUILD_DIR)

# The store's bytes per span, write rate and query times (bench/store_format.sh).
bench-store-format: benches
	bash bench/store_format.sh $(BUILD_DIR)

# The web UI's trace page over a store of 10 million spans, in chromium (bench/ui_trace_page.sh).
bench-ui: benches
	bash bench/ui_trace_page.sh $(BUILD_DIR)

# The agent under steady mixed load for 10 minutes, store on: memory, descriptors, threads,
# the store's disk and drops sampled for growth (bench/soak.sh).
bench-soak: benches
	bash bench/soak.sh $(BUILD_DIR)

# Issue 38's items 2-4 in one run: the store's format, then the tail, throughput and CPU per
# request against nginx with the store on and off (bench/saturation.sh).
bench-store: benches
	bash bench/store_format.sh $(BUILD_DIR)
	bash bench/saturation.sh $(BUILD_DIR)

format:
	find src tests bench -name '*.cc' -o -name '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD_DIR)
