#!/bin/bash
# Call 5: the next batch's BBs prefetched into L1 (prefetch.L1, no
# registers held): d10 at the decode (before the claim, the moves and the
# CQE fence), d11 after the CQEs; against the committed engine (d0).
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null
mkdir -p /tmp/b && tar xJf devbin5/e.txz -C /tmp/b
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t5; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,compute_mode --format=csv,noheader
run() { local n=$1 lim=$2; shift 2; timeout -s KILL $lim "$@" > $O/$n.log 2>&1; local rc=$?; pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null; echo "$n rc $rc"; }
for k in 1 2; do for v in d0 d10 d11; do
	run rate-$v$k 60 /tmp/b/e/$v/gic rate --row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16
	grep "with drain" $O/rate-$v$k.log | awk -v v=$v '{print "  " v ": " $1, $5, $6}'
	run pipe-$v$k 40 /tmp/b/e/$v/gic-gpu-pipeline --batch 500; grep -E "trace off|trace on" $O/pipe-$v$k.log | tail -2 | sed "s/^/  $v: /"
	run lat-$v$k 30 /tmp/b/e/$v/gic lat --path gda-inline --order fence-gpu --metric putc -n 2000
	grep -E "put\+completion" $O/lat-$v$k.log | awk -v v=$v '{print "  " v ": " $1, $2, $3, $4, $5}'
done; done
cd $OUT && tar czf t5.tgz t5 && rm -rf t5
