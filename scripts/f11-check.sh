#!/usr/bin/env bash
# scripts/f11-check.sh - Figure 11 (put+completion against payload size) and
# Figure 3a's put+completion panel on one GPU machine. Runs
#   gic lat --sweep --path gda-pointer --path proxy-baseline --path proxy-tuned
#     (GPU engine: gda-pointer pointer writes 8 B .. 1 MiB by 2, each
#     destination checked by a checker CTA after its completion; the proxy
#     paths, T1/R1/B1 with CPU workers and the CPU engine)
#   the same with --engine cpu -e 65536 (the checker over mapped host memory)
#   gic lat --sweep --path gda-inline --metric issue --metric putc (Figure 3a:
#     issue and put+completion per inline size, registers and staged)
#   gic lat --path all --metric putc (the 8-byte rows, unchanged)
#   scripts/report-plots.py on the JSON (fig3a, fig11)
# and prints one line per row: name, metric, p50, slots, and whether every
# payload was checked. Exit status 1 when a run failed or a row was not
# validated. Usage: scripts/f11-check.sh
#   GIC_GPU_BIN  build directory (default build; built when absent)
#   OUT          where the JSON, logs and figures go (default f11-logs)
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-lib.sh
device_setup f11
device_build gic

ptr="--path gda-pointer --path proxy-baseline --path proxy-tuned --order fence-gpu"
run_gic f11-gpu 300 lat --sweep $ptr --metric issue --metric putc
run_gic f11-cpu 300 lat --sweep $ptr --metric issue --metric putc --engine cpu -e 65536
run_gic f3a 240 lat --sweep --path gda-inline --order fence-gpu --metric issue --metric putc
run_gic lat8 240 lat --path all --order fence-gpu --metric putc

python3 - "$out" <<'PY' || status=1
import json, os, sys
bad = 0
for f in ("f11-gpu", "f11-cpu", "f3a", "lat8"):
    p = os.path.join(sys.argv[1], f + ".json")
    try:
        d = json.load(open(p))
    except Exception as e:
        print("%s: no JSON (%s)" % (f, e)); bad = 1; continue
    run = d.get("run", {})
    print("== %s: GPU %s, SM %s MHz, engine %s, commit %s, %d rows" % (f, run.get("gpu"),
          run.get("sm_mhz"), run.get("engine"), run.get("commit"), len(d["results"])))
    for r in d["results"]:
        par = dict(kv.split("=", 1) for kv in r.get("params", "").split() if "=" in kv)
        print("%-34s %-15s %10.3f %-3s p99 %10.3f  %-14s %s" % (
            r["name"], r["metric"], r["p50"], r.get("unit", ""), r["p99"],
            "slots=" + par["slots"] if "slots" in par else r.get("transport", ""),
            "valid" if r.get("validated") else "NOT VALIDATED"))
        bad |= not r.get("validated")
sys.exit(bad)
PY
python3 scripts/report-plots.py --only fig3a,fig11 "$out/f11-gpu.json" "$out/f11-cpu.json" \
	"$out/f3a.json" "$out/lat8.json" "$out/figures" 2>&1 | sed 's/^/plots: /'
exit $status
