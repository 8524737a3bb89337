#!/bin/bash
# Call 5: q (the next batch's BBs loaded right after the overlap proof, before the
# claim and the data stores) against pm (the merged p: loaded just before the CQE fence).
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null
mkdir -p /tmp/q && tar xJf devbin14/q.txz -C /tmp/q
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t5; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
run() { local n=$1 lim=$2; shift 2; timeout -s KILL $lim "$@" > $O/$n.log 2>&1; local rc=$?; pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null; echo "$n rc $rc"; }
for k in 1 2; do for v in pm q; do
	run rate-$v$k 60 /tmp/q/$v/gic rate --row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16
	grep "with drain" $O/rate-$v$k.log | awk -v v=$v '{print "  " v ": " $1, $3, $4, $5, $6, $7, $8}'
done; done
for k in 1 2; do for v in pm q; do
	run lat-$v$k 60 /tmp/q/$v/gic lat --path gda-inline
	grep -E 'put\+completion|rtt' $O/lat-$v$k.log | head -2 | cut -c1-100 | sed "s/^/  $v: /"
done; done
for t in conformance fidelity; do run $t-q 200 /tmp/q/q/gic-gpu-$t; tail -1 $O/$t-q.log; done
run pipe-q 100 /tmp/q/q/gic-gpu-pipeline --check; tail -1 $O/pipe-q.log
cd $OUT && tar czf t5.tgz t5 && rm -rf t5
