#!/usr/bin/env bash
# GPU runner for the device machine: builds (unless a build was carried),
# runs the GPU conformance suite on both softnic engines (and on two GPUs
# when there are two), then compute-sanitizer on reduced runs, and prints
# "N passed, N failed" last. Full logs go to $OUT (or ./gpu-logs).
# Usage: scripts/gpu-test.sh [--bench]   (--bench: also the engine's ceiling and
# `gic suite`, whose report goes to $OUT/report)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-logs}
bin=${GIC_GPU_BIN:-build}
mkdir -p "$out"
export CUDA_MODULE_LOADING=EAGER # docs/DESIGN.md §4.5: lazy loading deadlocks persistent kernels

if [ ! -x "$bin/gic-gpu-suite" ]; then
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$out/cmake.log" 2>&1 &&
		cmake --build build -j "$(nproc)" --target gic-gpu-suite gic-gpu-ceiling gic-gpu-engine-check \
			gic-gpu-proxy-suite gic gic-gpu-conformance gic-gpu-fidelity gic-gpu-recv gic-gpu-dc \
			gic-gpu-pipeline gic-gpu-xproc \
			gic-gpu-emu gic-gpu-mlx5-emu gic_emu_verbs gic_emu_mlx5 gic_emu_efa \
			>>"$out/cmake.log" 2>&1 ||
		{ echo "build failed (see $out/cmake.log)"; tail -20 "$out/cmake.log"; echo "0 passed, 1 failed"; exit 1; }
	bin=build
fi

ngpus=$(nvidia-smi -L 2>/dev/null | wc -l)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv >"$out/gpu.txt" 2>&1
passed=0 failed=0
run() { # name, seconds, command...
	local name=$1 secs=$2; shift 2
	if timeout "$secs" "$@" >"$out/$name.log" 2>&1; then passed=$((passed + 1)); echo "PASS $name"
	else failed=$((failed + 1)); echo "FAIL $name (rc $?)"; tail -15 "$out/$name.log"; fi
}
run suite 240 "$bin/gic-gpu-suite" both
grep -E "passed|note" "$out/suite.log"
if [ "$ngpus" -ge 2 ]; then
	run suite_twogpu 240 "$bin/gic-gpu-suite" twogpu
	grep -E "passed" "$out/suite_twogpu.log"
fi
# softnic across two processes, GPU regions through CUDA IPC (one GPU each):
# a gic-gpu-mpi built against the MPI of this machine's mpiexec
# (GIC_GPU_MPI_BIN: the folder holding it, default the build).
mpibin=${GIC_GPU_MPI_BIN:-$bin}
[ -x "$mpibin/gic-gpu-mpi" ] || cmake --build "$bin" --target gic-gpu-mpi >>"$out/cmake.log" 2>&1
if [ "$ngpus" -ge 2 ] && [ -x "$mpibin/gic-gpu-mpi" ] && command -v mpiexec >/dev/null; then
	mpx="mpiexec -n 2" lib=libmpich
	if mpiexec --version 2>&1 | grep -q OpenRTE; then
		mpx="mpiexec --allow-run-as-root --oversubscribe -n 2" lib=libmpi.so.40
	fi
	if ldd "$mpibin/gic-gpu-mpi" | grep -q "$lib"; then
		run gpu_mpi 180 $mpx "$mpibin/gic-gpu-mpi" transfer
		grep -E "PASSED|FAILED" "$out/gpu_mpi.log"
	else
		echo "SKIP gpu_mpi: $mpibin/gic-gpu-mpi is not built against mpiexec's MPI ($lib)"
	fi
fi
run engine_check 60 "$bin/gic-gpu-engine-check"
# The GPU engine's trace records every step of every WQE, in order.
[ -x "$bin/gic-gpu-pipeline" ] && run pipeline_trace 120 "$bin/gic-gpu-pipeline" --check
# GPU engines of two processes on this GPU (gic/softnic_gpu_peer.h): without
# MPS (each exit of the peer), then under an MPS daemon of our own (a peer
# that closes first: an abrupt exit under MPS poisons the survivor, NOTES).
if [ -x "$bin/gic-gpu-xproc" ]; then
	run xproc_abrupt 120 "$bin/gic-gpu-xproc" --check
	run xproc_closed 120 "$bin/gic-gpu-xproc" --check --peer-exit closed
	if command -v nvidia-cuda-mps-control >/dev/null && ! pgrep -f nvidia-cuda-mps >/dev/null; then
		export CUDA_MPS_PIPE_DIRECTORY=/tmp/gic-mps.$$ CUDA_MPS_LOG_DIRECTORY=/tmp/gic-mps-log.$$
		mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
		if nvidia-cuda-mps-control -d; then
			run xproc_mps_closed 120 "$bin/gic-gpu-xproc" --check --peer-exit closed
			run xproc_mps_lat 120 "$bin/gic-gpu-xproc" -n 10000
			grep -E "p50|payload" "$out/xproc_mps_lat.log"
			echo quit | nvidia-cuda-mps-control
			for _ in $(seq 1 20); do pgrep -f nvidia-cuda-mps >/dev/null || break; sleep 0.5; done
		fi
		unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
	fi
fi
# GPU threads posting into verbs-made and mlx5-provider-made queues of the
# emulated rdma-core device, on softnic's CPU engine and on its GPU engine.
for e in cpu gpu; do
	[ -x "$bin/gic-gpu-emu" ] &&
		run "gpu_emu_$e" 120 env LD_LIBRARY_PATH="$bin/emu" GIC_EMU_ENGINE=$e "$bin/gic-gpu-emu"
	[ -x "$bin/gic-gpu-mlx5-emu" ] &&
		run "gpu_mlx5_emu_$e" 120 env LD_LIBRARY_PATH="$bin/emu" GIC_EMU_ENGINE=$e \
			"$bin/gic-gpu-mlx5-emu"
done
# CI's host conformance cases (CPU engine there) on the GPU engine: host
# threads post, the GPU engine executes (tests/gpu/tk_gpu_engine.c).
for t in conformance fidelity recv dc; do
	[ -x "$bin/gic-gpu-$t" ] && run "host_cases_$t" 300 "$bin/gic-gpu-$t"
done
# mini-proxy with GPU producers, on both NIC placements.
[ -x "$bin/gic-gpu-proxy-suite" ] && { run proxy_suite 240 "$bin/gic-gpu-proxy-suite"
	grep -E "passed|FAIL" "$out/proxy_suite.log"; }
# compute-sanitizer serializes kernels, so a persistent engine can never run
# beside the kernels that wait on it: the sanitizers check the GPU submitters
# with the CPU engine (the whole suite), and the GPU engine's own code in
# on-demand mode with host submitters (gic-gpu-engine-check).
san="compute-sanitizer --error-exitcode 9"
run memcheck_cpu 200 $san --tool memcheck "$bin/gic-gpu-suite" cpu
# The engine check under the sanitizers on the wide kernels (batch_wqes 64
# and 96), whose wide path the other one lacks (every kernel runs above,
# unsanitized).
run memcheck_engine 200 $san --tool memcheck "$bin/gic-gpu-engine-check" 64
run memcheck_engine96 200 $san --tool memcheck "$bin/gic-gpu-engine-check" 96
run racecheck_cpu 200 $san --tool racecheck "$bin/gic-gpu-suite" cpu
run racecheck_engine 200 $san --tool racecheck "$bin/gic-gpu-engine-check" 64
run racecheck_engine96 200 $san --tool racecheck "$bin/gic-gpu-engine-check" 96
if [ "${1:-}" = "--bench" ]; then
	run ceiling 300 "$bin/gic-gpu-ceiling"
	cat "$out/ceiling.log"
	gic=$bin/gic
	[ -x "$gic" ] || gic=$bin/bench/gic/gic
	run gic_suite 540 "$gic" suite --out "$out/report"
	tail -3 "$out/gic_suite.log"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
