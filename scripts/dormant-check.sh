#!/usr/bin/env bash
# scripts/dormant-check.sh - `gic kernel` at the paper's settings for the
# dormant-code rows (paper §4.3.2, Figure 9, Table 14, Appendix D.2; issue 16
# item 1), on the GPU machine. Prints one line per row: registers, spill,
# resident blocks/SM (what the experiment reports: the compiler's numbers
# and the occupancy API's), kernel time and loss against "none".
#   t14   fma caller, 8 live values, 528 x 256, 16 messages of 8 B (Table 14)
#   f9b   stream caller, 16 live values, 528 x 256 (Figure 9b)
#   k8    stream caller, 16 live values, 8 blocks/SM: -c 8 x SMs (§4.3.2)
#   d160, d224  fma caller, 160 and 224 live values, dormant only (Appendix D.2)
# Usage: scripts/dormant-check.sh [--quick]
#   GIC_GPU_BIN  build directory with bench/gic/gic (default build; built when absent)
#   SMS          SMs of the GPU (default 132: H200)
#   OUT          where the CSVs and logs go (default dormant-logs)
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/device-lib.sh
device_setup dormant
sms=${SMS:-132}
quick=()
[ "${1:-}" = "--quick" ] && quick=(--quick)
device_build gic

failed=0
row() { # label, gic kernel arguments...
	local label=$1; shift
	if ! timeout 600 "$gic" kernel "${quick[@]}" "$@" --csv "$out/$label.csv" \
		>"$out/$label.log" 2>&1; then
		echo "$label: gic kernel failed (rc $?); last lines of $out/$label.log:"
		tail -5 "$out/$label.log"
		failed=$((failed + 1))
		return
	fi
	python3 - "$label" "$out/$label.csv" <<'EOF'
import csv, sys
label, path = sys.argv[1], sys.argv[2]
rows, order = {}, []
for r in csv.DictReader(open(path)):
    if r["name"] not in rows:
        order.append(r["name"])
        rows[r["name"]] = {"params": r["params"], "ok": r["validated"]}
    rows[r["name"]][r["metric"]] = float(r["p50"])
for name in order:
    v = rows[name]
    blocks = v["params"].split()[0]
    loss = "%6.1f%%" % v["loss"] if "loss" in v else "      -"
    wait = "  wait-loss %5.1f%%" % v["waiting loss"] if "waiting loss" in v else ""
    print("%-4s %-32s %-11s regs %3d spill %4d B  blocks/SM %2d  time %9.1f us  loss %s%s%s"
          % (label, name, blocks, v["registers"], v["spill"], v["blocks/SM"], v["time"], loss,
             wait, "" if v["ok"] == "1" else "  NOT VALIDATED"))
EOF
}

row t14 --caller fma --live 8 --msgs 16 -c 528 -t 256
row f9b --caller stream --live 16 --msgs 16 -c 528 -t 256
row k8 --caller stream --live 16 --variant none --variant code -c $((8 * sms)) -t 256
row d160 --caller fma --live 160 --variant none --variant code -c 528 -t 256
row d224 --caller fma --live 224 --variant none --variant code -c 528 -t 256
echo "gic kernel: $failed run(s) failed; CSVs and logs in $out"
[ "$failed" -eq 0 ]
