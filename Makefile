# Two commands do everything on a fresh machine:
#   make demo   build, then run the demonstration on softnic (writes, completes,
#               validates, prints latency percentiles and rate)
#   make test   build, then run what CI runs: the test suite, the suite again
#               under ASan+UBSan and under TSan, and the WQE, verbs and DEVX fuzzers (bounded)
# Both install the build dependencies first (scripts/install-deps.sh).

BUILD ?= build
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 60

.PHONY: all deps build demo test test-plain test-asan test-tsan fuzz clean

all: build

deps:
	./scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

demo: build
	./$(BUILD)/gic-demo

test-plain: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: deps
	cmake -S . -B $(BUILD)-asan -DCMAKE_C_COMPILER=clang -DGIC_SANITIZE=address,undefined \
	      -DGIC_CUDA=OFF -DCMAKE_BUILD_TYPE=Debug >/dev/null
	cmake --build $(BUILD)-asan -j $(JOBS)
	cd $(BUILD)-asan && ctest --output-on-failure -j $(JOBS)

test-tsan: deps
	cmake -S . -B $(BUILD)-tsan -DCMAKE_C_COMPILER=clang -DGIC_SANITIZE=thread \
	      -DGIC_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD)-tsan -j $(JOBS)
	cd $(BUILD)-tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -j 1

fuzz: deps
	cmake -S . -B $(BUILD)-fuzz -DCMAKE_C_COMPILER=clang -DGIC_FUZZ=ON \
	      -DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link \
	      -DGIC_SANITIZE=address,undefined -DGIC_CUDA=OFF >/dev/null
	cmake --build $(BUILD)-fuzz -j $(JOBS) --target fuzz_wqe fuzz_verbs fuzz_devx
	mkdir -p $(BUILD)-fuzz/corpus $(BUILD)-fuzz/corpus-verbs $(BUILD)-fuzz/corpus-devx
	# A small ASan quarantine: every input that fails a QP frees and
	# re-creates its queues, and a 256 MB quarantine of page-aligned rings
	# would grow past libFuzzer's RSS limit in a minute.
	ASAN_OPTIONS=quarantine_size_mb=32 ./$(BUILD)-fuzz/tests/fuzz_wqe \
	      -max_total_time=$(FUZZ_SECONDS) -max_len=1100 $(BUILD)-fuzz/corpus
	# Verbs call sequences on the emulated rdma-core device (src/emu).
	ASAN_OPTIONS=quarantine_size_mb=32 ./$(BUILD)-fuzz/src/emu/fuzz_verbs \
	      -max_total_time=$(FUZZ_SECONDS) -max_len=2000 $(BUILD)-fuzz/corpus-verbs
	# DEVX commands of any bytes and lengths on the emulated libmlx5.
	ASAN_OPTIONS=quarantine_size_mb=32 ./$(BUILD)-fuzz/src/emu/fuzz_devx \
	      -max_total_time=$(FUZZ_SECONDS) -max_len=4000 $(BUILD)-fuzz/corpus-devx

test: test-plain test-asan test-tsan fuzz
	@echo "make test: all passed"

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-tsan $(BUILD)-fuzz
