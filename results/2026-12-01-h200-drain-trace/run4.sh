#!/bin/bash
# Device call 4: the batch timeline with a ring that holds every write
# (2^14 BBs, as gic rate's t32-q1-warp: posting never waits) and with
# 2^10; the new engine, untraced (pipe) and stamped (pipe-tr).
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'bench/gic/gic|gic-gpu-|pipe' 2>/dev/null
mkdir -p devbin3/x && tar xJf devbin3/d.txz -C devbin3/x
export CUDA_MODULE_LOADING=EAGER
X=devbin3/x/m
O=$OUT/t4; mkdir -p $O
run() { local n=$1 lim=$2; shift 2; timeout -k 2 $lim "$@" > $O/$n.log 2>&1; echo "$n rc $?"; }
for L in 14 10; do
run pipe$L 40 $X/pipe --batch 500 --ring $L; grep -E "drained|timeline" $O/pipe$L.log | cut -c1-130
run tr$L 40 $X/pipe-tr --batch 500 --ring $L; grep -E "trace on|timeline|->" $O/tr$L.log | cut -c1-130
done
pkill -9 -f 'bench/gic/gic|gic-gpu-|pipe' 2>/dev/null
cd $OUT && tar czf t4.tgz t4 && rm -rf t4
