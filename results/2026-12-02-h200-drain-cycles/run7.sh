#!/bin/bash
# Call 7: the held poll run in the quiet only (waits for room keep the reloading run): d0 committed, q0 the change.
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null
mkdir -p /tmp/b && tar xJf devbin7/q.txz -C /tmp/b
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t7; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,compute_mode --format=csv,noheader
run() { local n=$1 lim=$2; shift 2; timeout -s KILL $lim "$@" > $O/$n.log 2>&1; local rc=$?; pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null; echo "$n rc $rc"; }
for k in 1 2; do for v in d0 q0; do
	run rate-$v$k 60 /tmp/b/$v/gic rate --row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16
	grep "message rate" $O/rate-$v$k.log | awk -v v=$v '{print "  " v ": " $1, $3, $4, $5, $6, $7, $8}'
	grep '^per' $O/rate-$v$k.log | head -3
done; done
for k in 1 2; do for v in d0 q0; do
	run lat-$v$k 60 /tmp/b/$v/gic lat --path gda-inline
	grep -E 'put\+completion|rtt|round' $O/lat-$v$k.log | head -3 | cut -c1-130 | sed "s/^/  $v: /"
done; done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf t7.tgz t7 && rm -rf t7
