#!/usr/bin/env bash
# mini-proxy rows of the paper's Tables 9-11 and Figure 7 at the paper's
# worker settings, on the device machine (one H200, 16 cores: workers from
# core 8, softnic CPU engine threads on 2..5). Builds `gic` unless a build
# was carried; JSON and full logs go to $OUT (or ./proxy-logs); prints one
# line per row.
#
# Usage: scripts/proxy-check.sh [rate|lat|loaded|all]   (default all)
#   rate:   Table 10 / Figure 7: tuned T1/R32/B1 and B16 cold (--idle 45000:
#           45 s idle before each configuration, as the paper's cold workers)
#           and warm (--warm 20000: 20 s of load); then the T=1,2,4,8 sweep
#           at B=1,16 without a set worker state, and T1 with --inflight 1
#           (one chain per worker: the rows measured before --inflight).
#           About 4 minutes.
#   lat:    Table 9's put+completion, baseline and tuned, T1/R1/B1, cold and
#           warm (about 3.5 minutes); the round trips from `gic lat`
#           (no worker state there: gic lat has no --idle/--warm).
#   loaded: Table 11: T4/R32/B16, 64 background CTAs, shared vs reserved,
#           the same (baseline) protocol. About 1 minute.
# IDLE_MS / WARM_MS override 45000 / 20000 (e.g. IDLE_MS=5000 for a quick
# look; the rows then say idle_ms=5000 in their params).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-proxy-logs}
bin=${GIC_GPU_BIN:-build}
idle=${IDLE_MS:-45000}
warm=${WARM_MS:-20000}
what=${1:-all}
mkdir -p "$out"
export CUDA_MODULE_LOADING=EAGER # docs/DESIGN.md §4.5

if [ ! -x "$bin/bench/gic/gic" ] && [ ! -x "$bin/gic" ]; then
	cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$out/cmake.log" 2>&1 &&
		cmake --build build -j "$(nproc)" --target gic >>"$out/cmake.log" 2>&1 ||
		{ echo "build failed (see $out/cmake.log)"; tail -20 "$out/cmake.log"; exit 1; }
	bin=build
fi
gic=$bin/bench/gic/gic
[ -x "$gic" ] || gic=$bin/gic

status=0
# name, seconds, gic arguments...: runs, keeps the log, prints the rows
# (name, metric, p50/value, unit, validated) and the worker clock.
step() {
	local name=$1 secs=$2; shift 2
	if ! timeout "$secs" "$gic" "$@" --json "$out/$name.json" >"$out/$name.log" 2>&1; then
		echo "FAIL $name (rc $?):"; tail -5 "$out/$name.log"; status=1
	fi
	grep -E "message rate|put\+completion|rtt|background rate" "$out/$name.log" |
		awk -v n="$name" '{ line = $0; gsub(/  +/, "  ", line); print n ": " line }'
}

case $what in rate | all)
	step t10_cold 200 proxy -T 1 -R 32 -B 1,16 --protocol tuned --metric rate --idle "$idle"
	step t10_warm 100 proxy -T 1 -R 32 -B 1,16 --protocol tuned --metric rate --warm "$warm"
	step f7_sweep 150 proxy -T 1,2,4,8 -R 32 -B 1,16 --protocol tuned --metric rate
	step f7_k1 60 proxy -T 1 -R 32 -B 1,16 --protocol tuned --metric rate --inflight 1
	;;
esac
case $what in lat | all)
	step t9_cold 200 proxy -T 1 -R 1 -B 1 --protocol both --metric lat --idle "$idle"
	step t9_warm 100 proxy -T 1 -R 1 -B 1 --protocol both --metric lat --warm "$warm"
	step t9_rtt 120 lat --path proxy-baseline --path proxy-tuned
	;;
esac
case $what in loaded | all)
	step t11 180 loaded --path proxy --bg-ctas 64 -T 4 -R 32 -B 16
	;;
esac
# The worker cores' clock where the machine exposes it (rows' notes too).
grep -h -o "worker 0: [0-9a-z]* *[A-Za-z]*" "$out"/t10_*.log "$out"/t9_*.log 2>/dev/null | sort | uniq -c
exit $status
