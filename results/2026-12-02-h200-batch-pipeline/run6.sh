#!/bin/bash
# Call 6: r (the next batch's BBs loaded after the CQE fence and tail) against pm
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null
mkdir -p /tmp/r && tar xJf devbin14/r.txz -C /tmp/r
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t6; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
run() { local n=$1 lim=$2; shift 2; timeout -s KILL $lim "$@" > $O/$n.log 2>&1; local rc=$?; pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null; echo "$n rc $rc"; }
for k in 1 2; do for v in pm r; do
	run rate-$v$k 60 /tmp/r/$v/gic rate --row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16
	grep "with drain" $O/rate-$v$k.log | awk -v v=$v '{print "  " v ": " $1, $3, $4, $5, $6, $7, $8}'
done; done
for k in 1 2; do for v in pm r; do
	run lat-$v$k 60 /tmp/r/$v/gic lat --path gda-inline
	grep -E 'put\+completion|rtt' $O/lat-$v$k.log | head -2 | cut -c1-100 | sed "s/^/  $v: /"
done; done
cd $OUT && tar czf t6.tgz t6 && rm -rf t6
