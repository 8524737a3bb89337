#!/bin/bash
# Device call 12: the last refactor's gic (r) against the commit before it
# (o), alternated twice: the drain rows and put+completion.
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'bench/gic/gic|gic-gpu-' 2>/dev/null
mkdir -p devbin3/x && tar xJf devbin3/r.txz -C devbin3/x && tar xJf devbin3/o.txz -C devbin3/x
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t12; mkdir -p $O
for k in 1 2; do for v in o n; do
	timeout -k 2 40 devbin3/x/$v/bench/gic/gic rate --row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16 > $O/rate-$v$k.log 2>&1
	grep "message rate with drain" $O/rate-$v$k.log | awk -v v=$v '{print "  " v ": " $1, $7}'
	timeout -k 2 30 devbin3/x/$v/bench/gic/gic lat --path gda-inline --order fence-gpu --metric putc -n 1000 > $O/lat-$v$k.log 2>&1
	grep -E "put\+completion" $O/lat-$v$k.log | awk -v v=$v '{print "  " v ": " $1, $2, $3, $4, $5}'
done; done
pkill -9 -f 'bench/gic/gic|gic-gpu-' 2>/dev/null
cd $OUT && tar czf t12.tgz t12 && rm -rf t12
