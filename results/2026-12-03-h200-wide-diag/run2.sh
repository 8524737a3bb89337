#!/bin/bash
# Call 2: the fix (rows no longer read the closed env's softnic; the silent
# CUDA error now printed). The GPU test runner, then every gic rate row with
# --engine-batch 64 and 32, then lat both ways.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c2; mkdir -p $O /tmp/g && tar xJf devbin16/c2.txz -C /tmp/g
G=/tmp/g/b/bench/gic/gic
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
GIC_GPU_BIN=/tmp/g/b OUT=$O/gpu timeout -s KILL 360 bash scripts/gpu-test.sh 2>&1 | grep -E '^(FAIL|SKIP)|passed' | tail -12
pkill -9 -f gic-gpu 2>/dev/null
for b in 64 32; do
	timeout -s KILL 200 $G rate --engine-batch $b --json $O/rate-$b.json > $O/rate-$b.log 2>&1
	echo "b$b rc $? $(grep -c ' yes ' $O/rate-$b.log) yes $(grep -c ' NO ' $O/rate-$b.log) NO; $(grep -E '^t(32|256)-q1-warp |^t64-q64-s64-b16 ' $O/rate-$b.log | grep -E 'drain|rate  ' | awk '{printf "%s %s %s; ", $1, $(NF-5), $NF}')"
	grep -E 'wrong|later|did not|rror' $O/rate-$b.log | head -4
done
for k in 1 2; do for b in 64 32; do
	timeout -s KILL 40 $G lat --engine-batch $b --path gda-inline > $O/lat-$b-$k.log 2>&1
	echo "lat b$b: $(grep -E 'put\+completion|rtt' $O/lat-$b-$k.log | head -2 | awk '{printf "%s %s %s %s | ", $1, $3, $4, $5}')"
done; done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
