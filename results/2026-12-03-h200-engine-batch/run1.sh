#!/bin/bash
# Call 8 of the session: the merged build (devbin15/fin2.txz). First the GPU
# test runner (scripts/gpu-test.sh: engine-check on both engine kernels, the
# conformance and fidelity programs, the suites, sanitizers); then
# `--engine-batch` 32 (default) vs 64 on gic rate's one-QP and 64-QP rows and
# on lat; then the lock and hand-off rows, whose kernels now inline the wide
# quiet, against the build before this session's quiet (devbin15/old.txz).
cd "$(dirname "$0")/../.." || exit 1
mkdir -p /tmp/g /tmp/old && tar xJf devbin15/fin2.txz -C /tmp/g && tar xJf devbin15/old.txz -C /tmp/old
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t1; mkdir -p $O
G=/tmp/g/b/bench/gic/gic
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
GIC_GPU_BIN=/tmp/g/b OUT=$O/gpu timeout -s KILL 360 bash scripts/gpu-test.sh 2>&1 | grep -E '^(FAIL|SKIP)|passed' | tail -30
pkill -9 -f gic-gpu 2>/dev/null
for b in 32 64; do
	timeout -s KILL 60 $G rate --engine-batch $b --row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16 --json $O/rate-$b.json > $O/rate-$b.log 2>&1
	grep "with drain" $O/rate-$b.log | awk -v v="batch=$b" '{print "  " v, $1, $6, $7}'
	timeout -s KILL 40 $G lat --engine-batch $b --path gda-inline > $O/lat-$b.log 2>&1
	grep -E 'put\+completion|rtt' $O/lat-$b.log | head -2 | awk -v v="batch=$b" '{print "  " v, $1, $3, $4, $5, $6}'
done
grep -o 'engine_batch=[0-9]*' $O/rate-64.json | sort | uniq -c
for v in old new; do
	b=$G; [ $v = old ] && b=/tmp/old/b/bench/gic/gic
	timeout -s KILL 60 $b rate --row t32-q1-lock --row t256-q1-handoff > $O/lock-$v.log 2>&1
	grep -E "^t(32|256)-q1-(lock|handoff) " $O/lock-$v.log | awk -v v=$v '{print "  " v, $1, $2, $3, $4, $5, $6, $7}'
done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf t1.tgz t1 && rm -rf t1
