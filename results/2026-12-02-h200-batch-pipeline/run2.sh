#!/bin/bash
# Call 2: cycle sums per region (../2026-12-02-h200-drain-cycles/cyc.py) of d0, p and pd, t32-q1-warp.
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null
mkdir -p /tmp/c && tar xJf devbin14/c.txz -C /tmp/c
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t2; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
run() { local n=$1 lim=$2; shift 2; timeout -s KILL $lim "$@" > $O/$n.log 2>&1; local rc=$?; pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null; echo "$n rc $rc"; }
for k in 1 2; do for v in cd0 cp cpd; do
	run rate-$v$k 60 /tmp/c/$v/gic rate --row t32-q1-warp
	grep "message rate" $O/rate-$v$k.log | awk -v v=$v '{print "  " v ": " $1, $3, $4, $5, $6, $7, $8}'
	grep '^cyc w0 passes' $O/rate-$v$k.log | tail -1 | cut -c1-400
	grep '^per w0' $O/rate-$v$k.log | head -2
done; done
cd $OUT && tar czf t2.tgz t2 && rm -rf t2
