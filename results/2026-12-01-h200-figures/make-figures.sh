#!/usr/bin/env bash
# The paper's figures from the newest committed H200 results, into this
# folder, with scripts/report-plots.py: each figure from the files named
# here (README.md says why these), the script's report in figures.log.
# Usage (from anywhere): results/2026-12-01-h200-figures/make-figures.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here/../.."
r=results
method=$r/2026-12-01-h200-suite-method
old=$r/2026-11-30-h200x2
plot() { python3 scripts/report-plots.py --require-matplotlib --only "$@" "$here"; }
{
	plot fig3a $method/sweep.json $method/sweep-12.json $method/sweep-48.json \
		$method/lat-after-slot.json
	plot fig3b $old/gic-suite/results.json $method/rate.json
	plot fig4 $method/scope.json
	plot fig5,table3-4 $method/suite-repeat3.json $method/lat-after-slot.json \
		$r/2026-12-01-h200-nvshmem-ibgda/ibgda_lat.json $r/2026-12-01-h200-nvshmem-ibrc/ibrc_lat.json
	plot fig11 $r/2026-12-01-h200-fig11/f11-sweep.json $method/suite-repeat3.json
	plot fig6 $old/gic-suite/results.json $old/nvshmem/loaded.json \
		$r/2026-12-01-h200-nvshmem-compare/ibgda-loaded-paced.json \
		$r/2026-12-01-h200-nvshmem-compare/ibrc-loaded-paced.json
	plot fig7 $r/2026-12-01-h200-proxy/f7_sweep.json $r/2026-12-01-h200-proxy/t10_cold.json \
		$method/suite-repeat3.json
	plot fig8 $old/gic-suite/results.json $r/2026-12-01-h200-nvshmem-ibgda/ibgda_payload.json \
		$r/2026-12-01-h200-nvshmem-ibrc/ibrc_payload.json
	plot fig9 $method/t14.csv $method/f9b.csv $method/k8.csv
	plot fig10 $old/gic-suite/results.json
	plot table5 $method/rate.json
	plot table10 $r/2026-12-01-h200-proxy/t10_cold.json $r/2026-12-01-h200-proxy/t10_warm.json
} 2>&1 | sed "s|$here/||; s|$here|results/2026-12-01-h200-figures|" | tee "$here/figures.log"
