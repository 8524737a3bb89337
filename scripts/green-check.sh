#!/usr/bin/env bash
# scripts/green-check.sh - softnic's GPU engine on SMs of its own (CUDA green
# contexts, `--engine-sms N`) against the engine sharing the callers' SMs
# (issue 16 item 1, issue 17), on the GPU machine:
#   kernel-shared, kernel-g8, kernel-g16
#       gic kernel, fma and stream callers, none/code/send/sendwait with 1 and
#       16 messages per block (528 x 256), the engine shared, then on 8 and
#       16 SMs of its own (the caller and its baseline on the remaining SMs)
#   lat-shared, lat-g8, lat-g16
#       gic lat gda-inline fence-gpu put+completion and rtt, the same three
#       placements
# Prints one line per kernel row with the three placements side by side
# (time, loss, waiting loss), the lat p50s, and each run's placement record
# (checked by check-results.py --placement); full logs and JSON in OUT.
# Every run has a limit (kernel 140 s, lat 50 s: the six fit one 600 s call).
# Usage: scripts/green-check.sh [--quick]
#   GIC_GPU_BIN  build directory with bench/gic/gic (default build; built when absent)
#   SMS_A, SMS_B the two reserved counts (default 8, 16)
#   OUT          where the logs and JSON go (default green-logs)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
# shellcheck source=scripts/device-lib.sh disable=SC2154 # out, status: device_setup
source scripts/device-lib.sh
device_setup green
quick=()
[ "${1:-}" = "--quick" ] && quick=(--quick)
a=${SMS_A:-8}
b=${SMS_B:-16}
device_build gic

places=(shared "g$a" "g$b")
flags() { case $1 in shared) ;; g*) echo "--engine-sms ${1#g}" ;; esac; }

for p in "${places[@]}"; do
	# shellcheck disable=SC2046 # flags() is a word list on purpose
	run_gic "kernel-$p" 140 kernel "${quick[@]}" --caller both --live 8 --msgs 1,16 \
		-c 528 -t 256 $(flags "$p")
	# shellcheck disable=SC2046
	run_gic "lat-$p" 50 lat "${quick[@]}" --path gda-inline --order fence-gpu \
		--metric putc --metric rtt $(flags "$p")
done

python3 - "$out" "${places[@]}" <<'EOF'
import json, os, sys
out, places = sys.argv[1], sys.argv[2:]
docs = {}
for kind in ("kernel", "lat"):
    for p in places:
        path = os.path.join(out, "%s-%s.json" % (kind, p))
        if os.path.exists(path):
            docs[(kind, p)] = json.load(open(path))
for p in places:
    for kind in ("kernel", "lat"):
        d = docs.get((kind, p))
        if d:
            pl = d["run"]["placement"]
            print("%-6s %-6s placement %-7s engine %3d SMs (asked %d), callers %3d of %d"
                  % (kind, p, pl["kind"], pl["engine_sms"], pl["engine_sms_asked"],
                     pl["caller_sms"], pl["device_sms"]))
rows, order = {}, []
for p in places:
    for r in docs.get(("kernel", p), {}).get("results", []):
        key = r["name"]
        if key not in rows:
            rows[key] = {}
            order.append(key)
        rows[key].setdefault(p, {})[r["metric"]] = (r["p50"], r["validated"], r["params"])
def cell(v, metric, fmt):
    return fmt % v[metric][0] if metric in v else " " * len(fmt % 0)
print("kernel rows (time us / loss %% / waiting loss %%), placements: %s" % " | ".join(places))
for name in order:
    line = "  %-32s" % name
    bad = ""
    for p in places:
        v = rows[name].get(p, {})
        line += " | %8s %6s %6s" % (cell(v, "time", "%8.1f"), cell(v, "loss", "%6.1f"),
                                    cell(v, "waiting loss", "%6.1f"))
        if any(not x[1] for x in v.values()):
            bad = "  NOT VALIDATED (%s)" % p
    print(line + bad)
for p in places:
    for r in docs.get(("lat", p), {}).get("results", []):
        if r["metric"] in ("put+completion", "rtt"):
            print("lat %-6s %-34s %-14s p50 %6.2f p99 %7.2f us%s"
                  % (p, r["name"], r["metric"], r["p50"], r["p99"],
                     "" if r["validated"] else "  NOT VALIDATED"))
# The SM probe's counts of the first green run (what the hardware did).
for p in places[1:]:
    for r in docs.get(("kernel", p), {}).get("results", [])[:1]:
        kv = dict(t.split("=", 1) for t in r["params"].split() if "=" in t)
        print("probe  %-6s engine stream ran on %s SMs, callers' on %s"
              % (p, kv.get("engine_sms_seen", "?"), kv.get("caller_sms_seen", "?")))
EOF

for p in "${places[@]}"; do
	kind=shared
	[ "$p" != shared ] && kind=green
	for e in kernel lat; do
		[ -f "$out/$e-$p.json" ] || continue
		python3 scripts/check-results.py --placement "$kind" "$out/$e-$p.json" \
			>>"$out/check.log" 2>&1 || { echo "FAIL check-results $e-$p (see $out/check.log)"; status=1; }
	done
done
echo "green-check: status $status; logs and JSON in $out"
exit "$status"
