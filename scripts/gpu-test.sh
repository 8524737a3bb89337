#!/usr/bin/env bash
# GPU runner for the device machine: builds (unless a build was carried),
# runs the GPU programs and prints "N passed, N failed" last. Full logs go
# to $OUT (or ./gpu-logs). Usage: scripts/gpu-test.sh [--sanitize]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-logs}
mkdir -p "$out"
export CUDA_MODULE_LOADING=EAGER # DESIGN.md: lazy loading deadlocks persistent kernels

if [ ! -x build/gic-gpu-post ]; then
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$out/cmake.log" 2>&1 &&
		cmake --build build -j "$(nproc)" --target gic-gpu-post >>"$out/cmake.log" 2>&1 ||
		{ echo "build failed (see $out/cmake.log)"; tail -20 "$out/cmake.log"; echo "0 passed, 1 failed"; exit 1; }
fi

nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv >"$out/gpu.txt" 2>&1
passed=0 failed=0
run() { # name, command...
	local name=$1; shift
	if "$@" >"$out/$name.log" 2>&1; then passed=$((passed + 1)); echo "PASS $name"
	else failed=$((failed + 1)); echo "FAIL $name"; tail -15 "$out/$name.log"; fi
}
run gpu_post build/gic-gpu-post "$out/gpu_post.detail"
grep -E "^gpu_post:|issue p50" "$out/gpu_post.log"
if [ "${1:-}" = "--sanitize" ]; then
	run memcheck compute-sanitizer --tool memcheck --error-exitcode 1 build/gic-gpu-post
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
