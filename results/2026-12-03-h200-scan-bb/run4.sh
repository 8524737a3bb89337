#!/bin/bash
# Call 4: which parts of the lane-0 path cost the batch-32 rate rows, and
# how the round trip varies: gic relinked with five engines (every other
# library as solo2's build; each with snx_mr_resolve_in's key-0 fix):
# v0 23f8a68's engine; vc solo_write with the full resolve and claim, the
# pass end in two places; va vc with the cached resolve and parked claim;
# vd vc's solo_write in warp_steps's structure (one pass end); vb solo2.
# Interleaved, lat four times each, rate (batch 32) twice each.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c4; mkdir -p $O /tmp/gv && tar xJf devbin18/vars.txz -C /tmp/gv
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
V="v0 va vb vc vd"
for k in 1 2 3 4; do for v in $V; do
	timeout -s KILL 40 /tmp/gv/v/gic-$v lat --path gda-inline > $O/lat-$v-$k.log 2>&1
	echo "$k $v lat rc $?: $(grep -E 'put\+completion|rtt' $O/lat-$v-$k.log | head -2 | awk '{printf "%s %s %s | ", $3, $4, $5}')"
done; done
for k in 1 2; do for v in $V; do
	timeout -s KILL 60 /tmp/gv/v/gic-$v rate --row t32-q1-warp --row t256-q1-warp --row t1-q1-b16 > $O/rate-$v-$k.log 2>&1
	echo "$k $v b32 rc $?: $(grep 'with drain' $O/rate-$v-$k.log | awk '{printf "%s %s %s | ", $1, $(NF-8), $(NF-1)}')"
done; done
grep -hE 'wrong|later|did not' $O/*.log | head -5
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
