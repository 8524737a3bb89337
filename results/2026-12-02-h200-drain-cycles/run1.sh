#!/bin/bash
# Call 1: where one engine warp's time goes while it drains one QP.
# cyc = the engine with clock64() sums per region of lane 0's service loop
# (cyc.py; diagnostic, not for use), d0 = the committed engine, same build.
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null
mkdir -p /tmp/b && tar xJf devbin7/b.txz -C /tmp/b
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t1; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,compute_mode --format=csv,noheader
run() { local n=$1 lim=$2; shift 2; timeout -s KILL $lim "$@" > $O/$n.log 2>&1; local rc=$?; pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null; echo "$n rc $rc"; }
for k in 1 2; do for v in d0 cyc; do
	run rate-$v$k 60 /tmp/b/$v/gic rate --row t32-q1-warp
	grep "message rate" $O/rate-$v$k.log | awk -v v=$v '{print "  " v ": " $0}' | cut -c1-150
	grep '^cyc' $O/rate-$v$k.log | sort | uniq -c | sort -rn | head -3 | cut -c1-400
	run pipe-$v$k 40 /tmp/b/$v/gic-gpu-pipeline --batch 500; grep "trace off" $O/pipe-$v$k.log | tail -1 | sed "s/^/  $v: /"
	grep '^cyc' $O/pipe-$v$k.log | tail -2 | cut -c1-400
done; done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf t1.tgz t1 && rm -rf t1
