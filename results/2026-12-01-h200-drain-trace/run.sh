#!/bin/bash
# Device call 1 (tenth session): where one QP's drain goes. gic-gpu-pipeline
# --batch (one warp, 32 inline writes per doorbell, the engine's trace on
# and off), then gic rate's drain rows for comparison. build-dev sm_90 at
# the working tree of this session, carried as devbin3/a.txz.
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'bench/gic/gic|gic-gpu-' 2>/dev/null
mkdir -p devbin3/x && tar xJf devbin3/a.txz -C devbin3/x
export CUDA_MODULE_LOADING=EAGER
B=devbin3/x/s
O=$OUT/t1; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
run() { local n=$1 lim=$2; shift 2; timeout -k 2 $lim "$@" > $O/$n.log 2>&1; echo "$n rc $?"; }
run batch500 60 $B/gic-gpu-pipeline --batch 500; cat $O/batch500.log | cut -c1-110
run batch32 30 $B/gic-gpu-pipeline --batch 32; grep -E "drained|timeline|->" $O/batch32.log | cut -c1-110
run rate 60 $B/bench/gic/gic rate --row t32-q1-warp --row t64-q64-s64-b16
grep "message rate" $O/rate.log | awk '{print "  " $1, $2, $3, $4, $5, $6}' ; tail -3 $O/rate.log | cut -c1-150
pkill -9 -f 'bench/gic/gic|gic-gpu-' 2>/dev/null
cd $OUT && tar czf t1.tgz t1 && rm -rf t1
