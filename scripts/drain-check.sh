#!/usr/bin/env bash
# scripts/drain-check.sh - issue 17's drain-rate axis on the GPU machine: how fast
# softnic's GPU engine drains one QP (t32-q1-warp, target >= 30 M msg/s "with
# drain") and many (t64-q64-s64-b16, >= 260 with drain), with the engine's
# exactness, its latency and the one-QP large-write bandwidth checked in the
# same call. With two builds it alternates them (old, new, old, new), so that
# the comparison is in one run.
#   1. exactness (new build only): gic-gpu-pipeline --check, gic-gpu-conformance,
#      -fidelity, -recv, gic-gpu-suite gpu, gic-gpu-engine-check; one PASS/FAIL
#      line each; then gic-gpu-pipeline -n ITERS (the one-WQE step table, log only);
#   2. per build, alternating, ROUNDS times:
#      gic rate --row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16
#               --row t16-q16-s16-b16 --row t4096-q16-s16-cta --row t32-q1-warp-wrap,
#      gic lat --path gda-inline --order fence-gpu --metric putc --metric rtt -n ITERS,
#      gic payload -b 65536 -e 4194304 -f 4 -n 200 --reps 3 (one QP: the bandwidth
#      change must stay);
#      one line per row and metric: the build, the row, p50 (and p99 for lat).
# All logs and JSON are packed into OUT/drain-logs.tgz.
# Usage: scripts/drain-check.sh
#   GIC_GPU_BIN      new build directory (default build; built when a program is absent)
#   GIC_GPU_BIN_OLD  optional: the build to compare with (the same program names;
#                    never built here)
#   OUT              logs and JSON (default drain-logs)
#   ITERS            lat samples and pipeline WQEs (default 1000)
#   ROUNDS           alternations of the two builds (default 2)
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-lib.sh
device_setup drain
iters=${ITERS:-1000}
rounds=${ROUNDS:-2}
old=${GIC_GPU_BIN_OLD:-}
progs="gic-gpu-pipeline gic-gpu-conformance gic-gpu-fidelity gic-gpu-recv gic-gpu-suite gic-gpu-engine-check"
device_build $progs gic
if [ -n "$old" ] && [ ! -x "$old/bench/gic/gic" ]; then
	echo "GIC_GPU_BIN_OLD=$old has no bench/gic/gic"; exit 1
fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>/dev/null |
	sed 's/^/gpu: /'

# 1. Exactness on the GPU engine (the new build).
check() { # name limit command...
	local name=$1 limit=$2
	shift 2
	if timeout "$limit" "$@" >"$out/$name.log" 2>&1; then
		echo "PASS $name: $(tail -1 "$out/$name.log" | cut -c1-100)"
	else
		echo "FAIL $name (rc $?): $(tail -3 "$out/$name.log" | tr '\n' ' ' | cut -c1-200)"
		status=1
	fi
}
check trace_check 120 "$bin/gic-gpu-pipeline" --check
for t in conformance fidelity recv; do
	check "gpu_$t" 300 "$bin/gic-gpu-$t"
done
check gpu_suite 240 "$bin/gic-gpu-suite" gpu
check engine_check 120 "$bin/gic-gpu-engine-check"
timeout 300 "$bin/gic-gpu-pipeline" -n "$iters" >"$out/pipeline-new.txt" 2>&1 ||
	echo "FAIL pipeline -n $iters (see pipeline-new.txt)"

# Prints the rows of a gic JSON file, labelled: one line per row and metric.
show() { # label json
	python3 - "$1" "$2" <<'PY' || status=1
import json, sys
label, path = sys.argv[1], sys.argv[2]
rows = json.load(open(path))["results"]
bad = 0
for r in rows:
    ok = "" if r["validated"] else "  NOT VALIDATED"
    bad += not r["validated"]
    if r["experiment"] == "lat":
        print("%-4s %-24s %-24s p50 %8.3f p99 %8.3f %s%s" % (
            label, r["name"][:24], r["metric"][:24], r["p50"], r["p99"], r["unit"], ok))
    elif r["experiment"] == "payload" and r["metric"] == "first size at 90% of own max":
        print("%-4s %-24s 90%% point %9.0f B%s" % (label, r["name"][:24], r["p50"], ok))
    else:
        print("%-4s %-24s %-24s p50 %8.2f %s%s" % (
            label, r["name"][:24], r["metric"][:24], r["p50"], r["unit"], ok))
sys.exit(1 if bad or not rows else 0)
PY
}

# One gic run of build dir b, labelled, JSON in out/NAME.json.
run_one() { # label bindir name limit args...
	local label=$1 b=$2 name=$3 limit=$4
	shift 4
	if timeout "$limit" "$b/bench/gic/gic" "$@" --json "$out/$name.json" >"$out/$name.log" 2>&1; then
		show "$label" "$out/$name.json"
	else
		echo "FAIL $label $name (rc $?): gic $*"; tail -4 "$out/$name.log"; status=1
	fi
}

# The builds in alternation: old then new, ROUNDS times (new alone without old).
builds=()
for ((r = 1; r <= rounds; r++)); do
	[ -n "$old" ] && builds+=("old:$old:$r")
	builds+=("new:$bin:$r")
done

rate=(rate --row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16 --row t16-q16-s16-b16
      --row t4096-q16-s16-cta --row t32-q1-warp-wrap)
for x in "${builds[@]}"; do
	IFS=: read -r label b r <<<"$x"
	run_one "$label" "$b" "rate-$label-$r" 300 "${rate[@]}"
	run_one "$label" "$b" "lat-$label-$r" 300 lat --path gda-inline --order fence-gpu \
		--metric putc --metric rtt -n "$iters"
	run_one "$label" "$b" "bw1-$label-$r" 300 payload -b 65536 -e 4194304 -f 4 -n 200 --reps 3
done

tar czf "$out/drain-logs.tgz" -C "$out" --exclude drain-logs.tgz . 2>/dev/null
[ "$status" -eq 0 ] && echo "drain-check: ok (logs in $out)" || echo "drain-check: failures (logs in $out)"
exit "$status"
