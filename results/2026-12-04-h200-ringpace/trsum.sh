#!/bin/bash
# trsum.sh FILE: per-transition time between consecutive trace records of
# warp 0 (sorted by ns): count, median, p90 (ns); and passes (step 8).
f=$1
tail -n +2 "$f" | awk -F, '$3==0' | sort -t, -k1,1n | awk -F, '
	NR > 1 { d = $1 - pns; if (d < 200000) print pst ">" $4, d }
	{ pns = $1; pst = $4 }
	$4 == 8 { np++; w += $6 }
	END { printf "passes %d, mean WQEs per pass (255 = saturated) %.1f\n", np, np ? w / np : 0 > "/dev/stderr" }' |
	sort -k1,1 -k2,2n | awk '
	function out() { if (n) printf "  %-5s n %6d p50 %7.0f p90 %7.0f\n", k, n, v[int(n * 0.5) + 1], v[int(n * 0.9) + 1] }
	$1 != k { out(); k = $1; n = 0 }
	{ v[++n] = $2 }
	END { out() }'
