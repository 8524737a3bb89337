#!/bin/bash
# Call 14: build mend (the review's mends: one record check shared by the
# pass's start and pass_extend, one clamp of the kernel's width, one
# choice of the CQE tails' acquire fence; the default kernel's PTX, gpu_rate.cu's
# and gpu_suite.cu's identical, the wide kernels two instructions apart)
# against w2tail (65f15fb): the GPU test runner on mend; gic rate at 64 and
# 96 and drain_watch at 96 side by side, twice.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c14; mkdir -p $O /tmp/gt /tmp/gm
tar xJf devbin19/w2tail.txz -C /tmp/gt && tar xJf devbin19/mend.txz -C /tmp/gm
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
GIC_GPU_BIN=/tmp/gm/b OUT=$O/gpu timeout -s KILL 300 bash scripts/gpu-test.sh 2>&1 | grep -E '^(FAIL|SKIP)|passed' | tail -8
pkill -9 -f gic-gpu 2>/dev/null
rows="--row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16"
for k in 1 2; do for n in w2tail mend; do
	B=/tmp/gt/b; [ $n = mend ] && B=/tmp/gm/b
	for b in 64 96; do
		timeout -s KILL 90 $B/bench/gic/gic rate --engine-batch $b $rows > $O/rate-$n-$b-$k.log 2>&1
		echo "$n b$b rc $?: $(grep 'with drain' $O/rate-$n-$b-$k.log | awk '{printf "%s %s %s | ", $1, $(NF-8), $(NF-1)}')"
	done
	DRAIN_BATCH=96 timeout -s KILL 60 $B/drain_watch 4 1 conc-warp > $O/w-$n-$k.log 2>&1
	echo "  $n conc-warp b96 rc $? clean $(grep -c 'bad payloads 0' $O/w-$n-$k.log): $(grep ' round [123]' $O/w-$n-$k.log | grep -o '([0-9.]* M msg/s' | tr '\n' ' ')"
done; done
grep -hE 'wrong|later|did not' $O/*.log | head -5
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c14.tgz c14 && rm -rf c14
