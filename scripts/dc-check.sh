#!/usr/bin/env bash
# scripts/dc-check.sh - DC against RC per operation (issue 16 item 6), on
# one GPU machine. Runs
#   gic lat --path gda-inline --path gda-dc --path gda-dc-full   (GPU
#     engine, then --engine cpu): the 8-byte inline write of gda-inline on
#     RC QP 0, and on PE0's DCI to PE1's DCT with the compact 16-byte AV
#     (one BB) and the full 48-byte AV (two BBs), issue, put+completion and
#     rtt (the answer PE1's DCI to PE0's DCT), fence-gpu, in one fixture
#   gic-gpu-dc dc_inline_u64_builders   (the DC builders against the GPU
#     engine: both forms landing, the full one wrapping, the wrong form
#     failing)
# and prints one line per row: name, metric, p50, the difference to
# gda-inline's row of the same metric and run, the AV form, and whether
# every payload was checked. Exit status 1 when a run failed or a row was
# not validated.
# Usage: scripts/dc-check.sh
#   GIC_GPU_BIN  build directory (default build; built when absent)
#   OUT          where the JSON and logs go (default dc-logs)
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-lib.sh
device_setup dc
device_build gic gic-gpu-dc

paths="--path gda-inline --path gda-dc --path gda-dc-full --order fence-gpu"
run_gic lat-gpu 120 lat $paths
run_gic lat-cpu 120 lat --engine cpu $paths
if timeout 120 "$bin/gic-gpu-dc" dc_inline_u64_builders >"$out/gpu-dc.log" 2>&1; then
	echo "gic-gpu-dc dc_inline_u64_builders: ok"
else
	echo "FAIL gic-gpu-dc dc_inline_u64_builders (rc $?)"; tail -8 "$out/gpu-dc.log"; status=1
fi

python3 - "$out" <<'PY' || status=1
import json, os, sys
bad = 0
for f in ("lat-gpu", "lat-cpu"):
    p = os.path.join(sys.argv[1], f + ".json")
    try:
        d = json.load(open(p))
    except Exception as e:
        print("%s: no JSON (%s)" % (f, e)); bad = 1; continue
    run = d.get("run", {})
    print("== %s: GPU %s, SM %s MHz, engine %s, commit %s" % (f, run.get("gpu"),
          run.get("sm_mhz"), run.get("engine"), run.get("commit")))
    rc = {r["metric"]: r.get("p50", r.get("value")) for r in d["results"]
          if r["name"] == "gda-inline fence-gpu"}
    for r in d["results"]:
        if r["name"].endswith(" floor"):
            continue
        v = r.get("p50", r.get("value"))
        par = dict(kv.split("=", 1) for kv in r.get("params", "").split() if "=" in kv)
        diff = ("  %+8.3f vs RC" % (v - rc[r["metric"]])) if (
            "dc" in r["name"] and r["metric"] in rc) else " " * 15
        print("%-22s %-15s %9.3f %-3s%s  %s  %s" % (
            r["name"], r["metric"], v, r.get("unit", ""), diff,
            " ".join("%s=%s" % (k, par[k]) for k in ("transport", "av", "answer") if k in par),
            "valid" if r.get("validated") else "NOT VALIDATED"))
        bad |= not r.get("validated")
sys.exit(bad)
PY
exit $status
