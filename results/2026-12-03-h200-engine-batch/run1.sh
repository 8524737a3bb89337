#!/bin/bash
# Call 8 of the session: the merged build (devbin15/fin2.txz): `--engine-batch`
# 32 (default) vs 64 on gic rate's one-QP and 64-QP rows and on lat, alternated;
# then the GPU test runner (scripts/gpu-test.sh) on the same binaries.
cd "$(dirname "$0")/../.." || exit 1
mkdir -p /tmp/g && tar xJf devbin15/fin2.txz -C /tmp/g
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t1; mkdir -p $O
G=/tmp/g/b/bench/gic/gic
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for k in 1 2; do for b in 32 64; do
	timeout -s KILL 90 $G rate --engine-batch $b --row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16 --json $O/rate-$b-$k.json > $O/rate-$b-$k.log 2>&1
	grep "with drain" $O/rate-$b-$k.log | awk -v v="batch=$b" '{print "  " v, $1, $6, $7}'
	timeout -s KILL 60 $G lat --engine-batch $b --path gda-inline > $O/lat-$b-$k.log 2>&1
	grep -E 'put\+completion|rtt' $O/lat-$b-$k.log | head -2 | awk -v v="batch=$b" '{print "  " v, $1, $3, $4, $5, $6}'
done; done
grep -o 'engine_batch=[0-9]*' $O/rate-64-1.json | sort | uniq -c
GIC_GPU_BIN=/tmp/g/b OUT=$O/gpu timeout -s KILL 420 bash scripts/gpu-test.sh 2>&1 | grep -E '^(FAIL|SKIP)|passed' | tail -30
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
pkill -9 -f gic-gpu 2>/dev/null
cd $OUT && tar czf t1.tgz t1 && rm -rf t1
