#!/usr/bin/env bash
# scripts/hostdb-check.sh - host-rung doorbells and payload's proxy shape
# (issue 16 items 3 and 5), on one GPU machine. Runs
#   gic rate --row t16-q16-s16-b16 --row t16-q16-s16-b16-hostdb   (GPU
#     engine: the same 16 QPs, 16 CTAs, B16, the poster ringing against one
#     pinned host thread ringing for GPU-built WQEs; the paper: 258 M msg/s),
#     and t4096-q16-s16-cta against its host-rung twin (the ringer forwarding
#     every doorbell of 4096 warp-cooperative posters: its own ceiling)
#   gic rate --engine cpu --row t16-q16-s16-b16-hostdb   (the CPU engine)
#   gic lat --path gda-hostdb --path gda-inline   (put+completion with the
#     host ringing, its poster-rung control in the same fixture, and the
#     usual gda-inline fence-gpu; the paper: 2.6-5.8 us more)
#   gic payload --path proxy -T 4 -R 16 -B 16 -e 65536   (Figure 8's proxy
#     shape, 16 producer CTAs) and -T 1 -R 1 -B 16 (the previous fixed one)
# and prints one line per row: name, metric, p50, the paper's number and
# ratio, the doorbell / proxy shape params, and whether every payload was
# checked. Exit status 1 when a run failed or a row was not validated.
# Usage: scripts/hostdb-check.sh
#   GIC_GPU_BIN  build directory (default build; built when absent)
#   OUT          where the JSON and logs go (default hostdb-logs)
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-lib.sh
device_setup hostdb
device_build gic

run_gic rate-gpu 240 rate --row t16-q16-s16-b16 --row t16-q16-s16-b16-hostdb --row t4096-q16-s16-cta --row t4096-q16-s16-cta-hostdb
run_gic rate-cpu 240 rate --engine cpu --row t16-q16-s16-b16-hostdb
run_gic lat 180 lat --path gda-hostdb --path gda-inline --order fence-gpu --metric issue --metric putc
run_gic payload-t4r16 240 payload --path proxy -T 4 -R 16 -B 16 -e 65536
run_gic payload-t1r1 240 payload --path proxy -T 1 -R 1 -B 16 -e 65536

python3 - "$out" <<'PY' || status=1
import json, os, sys
bad = 0
for f in ("rate-gpu", "rate-cpu", "lat", "payload-t4r16", "payload-t1r1"):
    p = os.path.join(sys.argv[1], f + ".json")
    try:
        d = json.load(open(p))
    except Exception as e:
        print("%s: no JSON (%s)" % (f, e)); bad = 1; continue
    run = d.get("run", {})
    print("== %s: GPU %s, SM %s MHz, engine %s, commit %s" % (f, run.get("gpu"),
          run.get("sm_mhz"), run.get("engine"), run.get("commit")))
    for r in d["results"]:
        v = r.get("p50", r.get("value"))
        p = r.get("paper")
        par = dict(kv.split("=", 1) for kv in r.get("params", "").split() if "=" in kv)
        keys = [k for k in ("doorbell", "order", "T", "R", "B", "per_thread") if k in par]
        extra = ("  paper %-6g x%.2f" % (p, v / p)) if p else ""
        print("%-24s %-26s %10.3f %-7s%s  %s  %s" % (
            r["name"], r["metric"], v, r.get("unit", ""), extra,
            " ".join("%s=%s" % (k, par[k]) for k in keys),
            "valid" if r.get("validated") else "NOT VALIDATED"))
        if r.get("note") and ("hostdb" in r["name"]):
            print("    note: %s" % r["note"])
        bad |= not r.get("validated")
sys.exit(bad)
PY
exit $status
