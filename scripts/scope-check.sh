#!/usr/bin/env bash
# scripts/scope-check.sh - completion scope on the GPU machine (paper
# Figure 4 and Table 7; issue 16 item 4). One call of
#   gic lat --path gda-inline --order fence-gpu --metric putc --metric rtt
#           --qps 1,2,4,8,16 --scope qp,all,all-progress
# (one softnic per count, QP 0 used, the others idle), then one line per
# row with p50 and p99: put+completion with the used QP's CQ only (qp,
# DeepEP's port), with a PE-wide quiet polling every other QP's CQ (all),
# with a PE-wide quiet reading every other QP's progress words as NVSHMEM
# 3.8's IBGDA quiet does (all-progress); and the round trip per count (a
# control: it completes nothing). Then the slope per added QP of each
# scope (least squares over the counts) and the 16-over-1 ratio, beside
# the paper's: Figure 4 (P-IB, NVSHMEM 3.4.5) all-QP doubles 1 -> 16, the
# used QP stays flat; Table 7 (P-RoCE B200, NVSHMEM 3.7.2) all-QP 18.02 ->
# 24.77 us (1.37x, 0.45 us per QP), used QP 16.93 -> 17.09. Every row's
# payloads are checked by gic; check-results.py checks the rows exist
# with their params.
# Usage: scripts/scope-check.sh
#   GIC_GPU_BIN  build directory with bench/gic/gic (default build; built when absent)
#   OUT          where the JSON and logs go (default scope-logs)
#   ITERS        samples per row after the warm-up (default 2000)
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-lib.sh
device_setup scope
iters=${ITERS:-2000}
device_build gic

failed=0
if ! timeout 600 "$gic" lat --path gda-inline --order fence-gpu --metric putc --metric rtt \
	--qps 1,2,4,8,16 --scope qp,all,all-progress -n "$iters" --json "$out/scope.json" \
	>"$out/scope.log" 2>&1; then
	echo "gic lat (scope sweep) failed (rc $?); last lines of $out/scope.log:"
	tail -5 "$out/scope.log"
	failed=$((failed + 1))
fi
python3 scripts/check-results.py --scope-rows 1,2,4,8,16 qp,all,all-progress \
	"$out/scope.json" >"$out/check.log" 2>&1 || {
	echo "check-results.py: FAIL"; tail -5 "$out/check.log"; failed=$((failed + 1)); }

python3 - "$out/scope.json" <<'PY' || failed=$((failed + 1))
import json, sys

try:
    doc = json.load(open(sys.argv[1]))
except (OSError, ValueError) as e:
    print("no results: %s" % e)
    sys.exit(1)
rows = [r for r in doc["results"] if r["experiment"] == "lat"]
def kv(r):
    return dict(t.split("=", 1) for t in r["params"].split() if "=" in t)
sm = sorted({kv(r).get("sm_mhz", "?") for r in rows})
print("SM clock %s MHz; transport %s" % ("/".join(sm), rows[0]["transport"] if rows else "?"))
series = {}
for r in rows:
    p = kv(r)
    scope = p["scope"] if r["metric"] == "put+completion" else "rtt"
    n = int(p["qps"])
    series.setdefault(scope, {})[n] = r
    print("%-14s qps=%-2d p50 %8.3f  p99 %8.3f us%s" % (
        scope if scope != "rtt" else "rtt (control)", n, r["p50"], r["p99"],
        "" if r["validated"] else "  INVALID"))
for scope in ("qp", "all", "all-progress", "rtt"):
    s = series.get(scope, {})
    if len(s) < 2:
        continue
    xs = sorted(s)
    ys = [s[x]["p50"] for x in xs]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    print("%-14s slope %.3f us per QP; p50 %d/%d QPs = %.2fx" % (
        scope, slope, xs[-1], xs[0], ys[-1] / ys[0]))
print("paper: Figure 4 (P-IB) all-QP about 2x from 1 to 16 QPs, used QP flat; "
      "Table 7 (P-RoCE) all-QP 1.37x (0.45 us per QP), used QP flat")
bad = [r["name"] for r in rows if not r["validated"]]
sys.exit(1 if bad else 0)
PY
[ "$failed" -eq 0 ] && echo "scope-check: ok" || echo "scope-check: $failed failure(s)"
exit "$failed"
