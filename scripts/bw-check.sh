#!/usr/bin/env bash
# scripts/bw-check.sh - issue 17's large-write bandwidth axis on the GPU machine:
# softnic's GPU engine moving RDMA writes of 4 KiB .. 4 MiB on one QP and 1 MiB
# on many QPs (targets: >= 50 GB/s on one QP at 1 MiB, >= 200 GB/s over many),
# with the engine's exactness and latency checked in the same call. With two
# builds it alternates them (old, new, old, new) so that the comparison is in
# one run.
#   1. exactness (new build only): gic-gpu-pipeline --check, gic-gpu-conformance,
#      -fidelity, -recv, gic-gpu-suite gpu, gic-gpu-engine-check (the programs
#      scripts/pipeline-check.sh runs); one PASS/FAIL line each;
#   2. gic lat --path gda-inline --order fence-gpu, put+completion and rtt
#      (must not regress), ROUNDS times per build, alternating;
#   3. gic payload (GPU gda path, every payload checked): one QP -b 4K -e 4M -f 2
#      (--reps REPS), then --qps 8, 16, 64 at 1 MiB on the default engine (4 x 4
#      warps; label new/old) and on a wider one (WIDE, blocks x warps; label
#      neww/oldw), alternating builds; one line per row: p50 / p99 / max GB/s
#      over REPS runs, and each sweep's 90% point.
# Usage: scripts/bw-check.sh
#   GIC_GPU_BIN      new build directory (default build; built when a program is absent)
#   GIC_GPU_BIN_OLD  optional: the build to compare with (never built here). A gic
#                    without payload --qps (before this change) runs the one-QP
#                    sweep and lat only (its rows say "old").
#   OUT              logs and JSON (default bw-logs)
#   ITERS            writes per QP and size (default 200), lat samples (1000)
#   REPS             runs per payload size (default 5)
#   ROUNDS           alternations of the two builds (default 2)
#   WIDE             the wider engine for the many-QP rows (default "16 8")
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-lib.sh
device_setup bw
iters=${ITERS:-200}
reps=${REPS:-5}
rounds=${ROUNDS:-2}
read -r wide_b wide_w <<<"${WIDE:-16 8}"
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

# Prints the rows of a gic JSON file, labelled: one line per goodput or
# latency row (p50 / p99 / max) and the 90% point.
show() { # label json
	python3 - "$1" "$2" <<'PY' || status=1
import json, sys
label, path = sys.argv[1], sys.argv[2]
rows = json.load(open(path))["results"]
bad = 0
for r in rows:
    ok = "" if r["validated"] else "  NOT VALIDATED"
    bad += not r["validated"]
    if r["metric"] == "first size at 90% of own max":
        print("%-4s %-26s 90%% point %9.0f B (%s)%s" % (label, r["name"], r["p50"], r["params"], ok))
    elif r["experiment"] in ("payload", "lat"):
        print("%-4s %-26s %-8s p50 %9.3f p99 %9.3f max %9.3f %s (n=%d)%s" % (
            label, r["name"][:26], r["metric"][:8], r["p50"], r["p99"], r["max"], r["unit"],
            r["count"], ok))
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

has_qps() { "$1/bench/gic/gic" payload --help 2>&1 | grep -q -- '--qps'; }

# The builds in alternation: old then new, ROUNDS times (new alone without old).
builds=()
for ((r = 1; r <= rounds; r++)); do
	[ -n "$old" ] && builds+=("old:$old:$r")
	builds+=("new:$bin:$r")
done

# 2. Latency.
for x in "${builds[@]}"; do
	IFS=: read -r label b r <<<"$x"
	run_one "$label" "$b" "lat-$label-$r" 300 lat --path gda-inline --order fence-gpu \
		--metric putc --metric rtt -n 1000
done

# 3. Bandwidth.
one=(payload -b 4096 -e 4194304 -f 2 -n "$iters")
for x in "${builds[@]}"; do
	IFS=: read -r label b r <<<"$x"
	if has_qps "$b"; then
		run_one "$label" "$b" "bw1-$label-$r" 600 "${one[@]}" --reps "$reps"
	else
		run_one "$label" "$b" "bw1-$label-$r" 600 "${one[@]}"
	fi
done
for x in "${builds[@]}"; do
	IFS=: read -r label b r <<<"$x"
	if ! has_qps "$b"; then
		echo "$label: gic payload has no --qps (a build before it): many-QP rows skipped"
		continue
	fi
	for q in 8 16 64; do
		run_one "$label" "$b" "bwq$q-$label-$r" 300 payload -b 1048576 -e 1048576 \
			-n "$iters" --qps "$q" --reps "$reps"
		run_one "${label}w" "$b" "bwq$q-wide-$label-$r" 300 payload -b 1048576 -e 1048576 \
			-n "$iters" --qps "$q" --reps "$reps" --engine-blocks "$wide_b" \
			--engine-warps "$wide_w"
	done
done

tar czf "$out/bw-logs.tgz" -C "$out" --exclude bw-logs.tgz . 2>/dev/null
[ "$status" -eq 0 ] && echo "bw-check: ok (logs in $out)" || echo "bw-check: failures (logs in $out)"
exit "$status"
