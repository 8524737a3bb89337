#!/bin/bash
# Call 7: build w2tail (final + two per lane for the 64-95 WQEs a pass
# ends with, in the three-per-lane kernel) against final (f2d559f): the
# GPU test runner on w2tail; drain_watch and gic rate at 96 side by side,
# three times; gic lat at 96.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c7; mkdir -p $O /tmp/gf /tmp/gt
tar xJf devbin19/final.txz -C /tmp/gf && tar xJf devbin19/w2tail.txz -C /tmp/gt
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
t0=$(date +%s)
GIC_GPU_BIN=/tmp/gt/b OUT=$O/gpu timeout -s KILL 300 bash scripts/gpu-test.sh 2>&1 | grep -E '^(FAIL|SKIP)|passed' | tail -8
echo "gpu-test $(( $(date +%s) - t0 )) s"
pkill -9 -f gic-gpu 2>/dev/null
for m in alone conc-warp alone-ringpace; do for n in final w2tail; do
	B=/tmp/gf/b; [ $n = w2tail ] && B=/tmp/gt/b
	DRAIN_BATCH=96 timeout -s KILL 60 $B/drain_watch 4 1 $m > $O/w-$n-$m.log 2>&1
	echo "$n $m rc $? clean $(grep -c 'bad payloads 0' $O/w-$n-$m.log): $(grep ' round [123]' $O/w-$n-$m.log | grep -o '([0-9.]* M msg/s' | tr '\n' ' ') | $(grep 'engine:' $O/w-$n-$m.log | tail -1 | grep -o 'between.*')"
done; done
rows="--row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16"
for k in 1 2 3; do for n in final w2tail; do
	B=/tmp/gf/b; [ $n = w2tail ] && B=/tmp/gt/b
	timeout -s KILL 90 $B/bench/gic/gic rate --engine-batch 96 $rows > $O/rate-$n-$k.log 2>&1
	echo "$n b96 rc $?: $(grep 'with drain' $O/rate-$n-$k.log | awk '{printf "%s %s %s | ", $1, $(NF-8), $(NF-1)}')"
	timeout -s KILL 40 $B/bench/gic/gic lat --path gda-inline --engine-batch 96 > $O/lat-$n-$k.log 2>&1
	echo "  $n lat b96 rc $?: $(grep -E 'put\+completion|rtt' $O/lat-$n-$k.log | head -2 | awk '{printf "%s %s %s %s | ", $3, $4, $5, $6}')"
done; done
grep -hE 'wrong|later|did not' $O/*.log | head -5
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c7.tgz c7 && rm -rf c7
