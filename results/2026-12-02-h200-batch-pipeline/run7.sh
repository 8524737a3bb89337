#!/bin/bash
# Call 7: the merged engine after the review's simplification (the prefetched
# state derived from the batch's result): rate and lat rows, then the GPU test runner.
cd "$(dirname "$0")/../.." || exit 1
mkdir -p /tmp/g && tar xJf devbin14/g.txz -C /tmp/g
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t7; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for k in 1 2; do
	timeout -s KILL 60 /tmp/g/b/bench/gic/gic rate --row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16 > $O/rate$k.log 2>&1
	grep "with drain" $O/rate$k.log | awk '{print "  " $1, $3, $4, $5, $6, $7, $8}'
done
timeout -s KILL 60 /tmp/g/b/bench/gic/gic lat --path gda-inline > $O/lat.log 2>&1
grep -E 'put\+completion|rtt' $O/lat.log | head -2 | cut -c1-100
GIC_GPU_BIN=/tmp/g/b OUT=$O/gpu timeout -s KILL 420 bash scripts/gpu-test.sh 2>&1 | grep -E '^(FAIL|SKIP)|passed' | tail -30
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf t7.tgz t7 && rm -rf t7
