#!/usr/bin/env bash
# scripts/inline-check.sh - inline payloads on the GPU machine (paper
# Figure 3a and 3b; issue 16 item 2). Runs
#   gic lat --path gda-inline --order fence-gpu --metric issue --sweep
#     (8 12 16 32 48 64 128 256 512 B; rows "gda-inline" = payload in
#     registers, the paper's mini-gda, and "gda-inline-staged" = payload
#     loaded from GPU memory inside the timed span, the old path)
#   gic rate --row fig3b --row fig3b-q1
#     (16 QPs / 16 threads / 16 CTAs, and one QP; 16 WQEs per doorbell;
#     inline in registers, inline staged, pointer; 8, 64, 256 B)
# and prints the issue p50 per size of each variant, the least-squares
# slope of issue p50 against 16-byte chunks (sizes 16..512; paper: about
# 0.1 us per 16 B), the 8 -> 16 B step beside that slope, then the rate
# rows. Every row's payloads are checked by gic ("valid" column). First
# it runs gic-gpu-conformance's inline cases on softnic's GPU engine
# (multi-BB inline WQEs through the engine's per-lane batch path). With
# cuobjdump on PATH it also prints the timed span's SASS counts
# (scripts/inline-sass.py) of the binary that ran.
# Usage: scripts/inline-check.sh
#   GIC_GPU_BIN  build directory with bench/gic/gic (default build; built when absent)
#   OUT          where the JSON and logs go (default inline-logs)
#   ITERS        samples per sweep size after the warm-up (default 2000)
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-lib.sh
device_setup inline
iters=${ITERS:-2000}
device_build gic

failed=0
if ! timeout 600 "$gic" lat --path gda-inline --order fence-gpu --metric issue --sweep \
	-b 8 -e 512 -f 2 -n "$iters" --json "$out/sweep.json" >"$out/sweep.log" 2>&1; then
	echo "gic lat --sweep failed (rc $?); last lines of $out/sweep.log:"
	tail -5 "$out/sweep.log"
	failed=$((failed + 1))
fi
# -f 2 from 8 gives 8 16 32 ... 512; 12 and 48 (one segment after the
# header; the largest payloads of one BB) come from a second call.
for s in 12 48; do
	if ! timeout 300 "$gic" lat --path gda-inline --order fence-gpu --metric issue --sweep \
		-b $s -e $s -n "$iters" --json "$out/sweep-$s.json" >"$out/sweep-$s.log" 2>&1; then
		echo "gic lat --sweep -b $s failed (rc $?); see $out/sweep-$s.log"
		failed=$((failed + 1))
	fi
done
if ! timeout 600 "$gic" rate --row fig3b --row fig3b-q1 --json "$out/rate.json" \
	>"$out/rate.log" 2>&1; then
	echo "gic rate --row fig3b failed (rc $?); last lines of $out/rate.log:"
	tail -5 "$out/rate.log"
	failed=$((failed + 1))
fi

# Multi-BB inline WQEs on softnic's GPU engine, batch path (one WQE per
# lane whatever its BBs): the conformance cases on the GPU engine.
conf=$bin/gic-gpu-conformance
[ -x "$conf" ] || cmake --build "$bin" -j "$(nproc)" --target gic-gpu-conformance \
	>>"$out/cmake.log" 2>&1
for c in inline_regs_batches inline_sizes inline_u64_bytes; do
	if [ -x "$conf" ] && timeout 300 "$conf" $c >"$out/conf-$c.log" 2>&1; then
		echo "PASS gic-gpu-conformance $c (GPU engine)"
	else
		echo "FAIL gic-gpu-conformance $c (rc $?); last lines of $out/conf-$c.log:"
		tail -5 "$out/conf-$c.log" 2>/dev/null
		failed=$((failed + 1))
	fi
done
echo

python3 - "$out" <<'PY'
import glob, json, os, sys

out = sys.argv[1]
rows = []
for f in sorted(glob.glob(os.path.join(out, "sweep*.json"))) + [os.path.join(out, "rate.json")]:
    try:
        rows += json.load(open(f))["results"]
    except (OSError, ValueError, KeyError) as e:
        print("%s: %s" % (f, e))

def fit(pts):  # least squares y = a + b x
    n = len(pts)
    if n < 2:
        return None
    mx = sum(x for x, _ in pts) / n
    my = sum(y for _, y in pts) / n
    sxx = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / sxx if sxx else None

sweep = {}
for r in rows:
    if r["experiment"] == "lat" and r["metric"] == "issue" and "size=" in r["name"] \
            and not r["name"].endswith("floor"):
        path = r["name"].split()[0]
        size = int(r["name"].split("size=")[1])
        sweep.setdefault(path, {})[size] = (r["p50"], r["p99"], r["validated"])
floor = [r["p50"] for r in rows if r["name"].endswith("size=8 floor")]
print("Figure 3a: issue p50 (us) against inline payload size, fence-gpu, one thread")
print("%-6s" % "size" + "".join("%26s" % p for p in sorted(sweep)))
sizes = sorted({s for p in sweep.values() for s in p})
for s in sizes:
    line = "%-6d" % s
    for p in sorted(sweep):
        v = sweep[p].get(s)
        line += "%26s" % ("-" if v is None else "%.3f (p99 %.3f)%s" % (v[0], v[1], "" if v[2] else " INVALID"))
    print(line)
if floor:
    print("floor (8 B stores and fences, no queue logic): %.3f us" % floor[0])
for p in sorted(sweep):
    pts = [(s / 16.0, v[0]) for s, v in sweep[p].items() if s >= 16]
    b = fit(pts)
    step = sweep[p][16][0] - sweep[p][8][0] if 8 in sweep[p] and 16 in sweep[p] else None
    print("%s: slope %s us per 16 B (sizes 16..512; paper about 0.1); 8 -> 16 B step %s us"
          % (p, "%.4f" % b if b is not None else "-", "%.3f" % step if step is not None else "-"))
reg, stg = sweep.get("gda-inline", {}), sweep.get("gda-inline-staged", {})
if 8 in reg and 16 in stg:
    print("the sweep before this change (8 B from registers, 16 B and up staged): 8 -> 16 B "
          "step %.3f us" % (stg[16][0] - reg[8][0]))
print()
print("Figure 3b: message rate (M msg/s), GPU side (first post to last doorbell) / with drain")
rate = {}
for r in rows:
    if r["experiment"] == "rate":
        rate.setdefault(r["name"], {})[r["metric"]] = r
for name in sorted(rate, key=lambda n: ("-q1-" in n, n)):
    m = rate[name]
    a, d = m.get("message rate"), m.get("message rate with drain")
    print("%-28s %8s / %-8s %s  %s" % (name, "%.3f" % a["p50"] if a else "-",
          "%.3f" % d["p50"] if d else "-", "valid" if a and a["validated"] else "INVALID",
          a["params"] if a else ""))
PY

if command -v cuobjdump >/dev/null 2>&1; then
	echo
	echo "SASS of the timed span (fence-gpu; cuobjdump -sass -arch sm_90 of $gic):"
	cuobjdump -sass -arch sm_90 "$gic" >"$out/gic.sass" 2>/dev/null &&
		python3 scripts/inline-sass.py "$out/gic.sass"
fi
exit $failed
