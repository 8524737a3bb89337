#!/usr/bin/env bash
# scripts/t5-check.sh - paper Table 5 as the paper measures it (issue 16
# item 3), on one GPU machine. Runs
#   gic-gpu-conformance threads_ticket_lock threads_handoff_add
#     threads_ticket_handoff_mixed   (host threads through the ticket lock
#     and the hand-off by atomic add on softnic's GPU engine, 64-BB ring,
#     every slot checked)
#   gic rate --row all   (Table 5's rows, the round-robin rows t1-qN-rr,
#     one QP per CTA t4096-q16-s16-cta, the compare-and-swap lock row
#     t32-q1-caslock beside the ticket lock's t32-q1-lock, and the -wrap
#     rows: 2^10-BB rings wrapping 16 times, reclaimed while posting, the
#     drain counted)
# and prints one line per row: name, metric, p50 (M msg/s), the paper's
# number and the ratio, and whether every payload was checked. For the
# -wrap rows "message rate" is to the last CQE (the paper's method;
# softnic's engine is the NIC here) and "posting only" the GPU side.
# Usage: scripts/t5-check.sh
#   GIC_GPU_BIN  build directory (default build; built when absent)
#   OUT          where the JSON and logs go (default t5-logs)
#   ROWS         gic rate --row arguments (default: all)
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-lib.sh
device_setup t5
device_build gic gic-gpu-conformance
conf=$bin/gic-gpu-conformance

status=0
for c in threads_ticket_lock threads_handoff_add threads_ticket_handoff_mixed; do
	if timeout 300 "$conf" "$c" >"$out/conf-$c.log" 2>&1; then
		echo "conformance $c (GPU engine): pass"
	else
		echo "conformance $c (GPU engine): FAIL (rc $?)"; tail -3 "$out/conf-$c.log"; status=1
	fi
done

rows=()
for r in ${ROWS:-all}; do rows+=(--row "$r"); done
if ! timeout 570 "$gic" rate "${rows[@]}" --json "$out/rate.json" >"$out/rate.log" 2>&1; then
	echo "FAIL gic rate (rc $?):"; tail -5 "$out/rate.log"; status=1
fi
python3 - "$out/rate.json" <<'PY' || status=1
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("no JSON:", e); sys.exit(1)
run = d.get("run", {})
print("GPU %s, SM %s MHz, engine %s, commit %s" % (run.get("gpu"), run.get("sm_mhz"),
      run.get("engine"), run.get("commit")))
for r in d["results"]:
    v = r.get("p50", r.get("value"))
    p = r.get("paper")
    par = dict(kv.split("=", 1) for kv in r.get("params", "").split() if "=" in kv)
    extra = ("  paper %-6g x%.2f" % (p, v / p)) if p else ""
    print("%-22s %-26s %9.3f%s  per_thread=%s ring=%s %s" % (
        r["name"], r["metric"], v, extra, par.get("per_thread", "?"), par.get("ring_bb", "?"),
        "valid" if r.get("validated") else "NOT VALIDATED"))
PY
exit $status
