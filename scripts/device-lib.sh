# scripts/device-lib.sh - what the device scripts (scripts/*-check.sh) share.
# Source it from the repository root, after `set -uo pipefail`:
#   device_setup NAME
#       bin: GIC_GPU_BIN or build; out: OUT or NAME-logs (made); gic: the
#       gic program in bin; CUDA_MODULE_LOADING=EAGER (docs/DESIGN.md §4.5:
#       lazy loading deadlocks persistent kernels); status=0.
#   device_build TARGET...
#       builds the targets into bin when one of them is absent (gic is
#       bin/bench/gic/gic, the others bin/TARGET); on failure prints the
#       log's tail and exits 1.
#   run_gic NAME LIMIT ARGS...
#       gic ARGS --json out/NAME.json within LIMIT seconds, its output in
#       out/NAME.log; on failure prints the command and the log's tail and
#       sets status=1.

device_setup() {
	bin=${GIC_GPU_BIN:-build}
	out=${OUT:-$1-logs}
	gic=$bin/bench/gic/gic
	status=0
	mkdir -p "$out"
	export CUDA_MODULE_LOADING=EAGER
}

device_build() {
	local t need=0
	for t in "$@"; do
		if [ "$t" = gic ]; then [ -x "$gic" ] || need=1; else [ -x "$bin/$t" ] || need=1; fi
	done
	[ "$need" -eq 0 ] && return 0
	{ cmake -S . -B "$bin" -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
		cmake --build "$bin" -j "$(nproc)" --target "$@"; } >"$out/cmake.log" 2>&1 ||
		{ echo "build failed (see $out/cmake.log)"; tail -20 "$out/cmake.log"; exit 1; }
}

run_gic() {
	local name=$1 limit=$2
	shift 2
	if ! timeout "$limit" "$gic" "$@" --json "$out/$name.json" >"$out/$name.log" 2>&1; then
		echo "FAIL $name (rc $?): gic $*"; tail -8 "$out/$name.log"; status=1
	fi
}
