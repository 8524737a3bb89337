#!/bin/bash
# Call 5: build w96 (new + pass_extend + the three-per-lane kernel behind
# batch_wqes 96, --engine-batch 96, at 255 registers) against new
# (62d299a): the GPU test runner (the engine check and its sanitizer runs
# on the 96 kernel too) and gic suite --quick on w96; drain_watch at 64 and
# 96; gic rate and gic lat side by side, twice.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c5; mkdir -p $O /tmp/gn /tmp/gw
tar xJf devbin19/new.txz -C /tmp/gn && tar xJf devbin19/w96.txz -C /tmp/gw
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
t0=$(date +%s)
GIC_GPU_BIN=/tmp/gw/b OUT=$O/gpu timeout -s KILL 300 bash scripts/gpu-test.sh 2>&1 | grep -E '^(FAIL|SKIP)|passed' | tail -8
grep -h 'engine batch' $O/gpu/engine_check.log
echo "gpu-test $(( $(date +%s) - t0 )) s"
pkill -9 -f gic-gpu 2>/dev/null
timeout -s KILL 300 /tmp/gw/b/bench/gic/gic suite --quick --json $O/qsuite.json > $O/qsuite.log 2>&1; echo "suite rc $?: rows $(grep -o '"validated": [a-z]*' $O/qsuite.json | wc -l), invalid $(grep -o '"validated": false' $O/qsuite.json | wc -l)"
for m in alone:64 alone:96 conc-warp:64 conc-warp:96; do
	mode=${m%:*} b=${m#*:}
	DRAIN_BATCH=$b timeout -s KILL 60 /tmp/gw/b/drain_watch 4 1 $mode > $O/w-$mode-$b.log 2>&1
	echo "w96 $mode b$b rc $? clean $(grep -c 'bad payloads 0' $O/w-$mode-$b.log): $(grep ' round [123]' $O/w-$mode-$b.log | grep -o '([0-9.]* M msg/s' | tr '\n' ' ')"
done
rows="--row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16"
for k in 1 2; do
	for m in new:64 w96:32 w96:64 w96:96; do
		n=${m%:*} b=${m#*:} B=/tmp/gn/b; [ $n = w96 ] && B=/tmp/gw/b
		timeout -s KILL 90 $B/bench/gic/gic rate --engine-batch $b $rows > $O/rate-$n-$b-$k.log 2>&1
		echo "$n b$b rc $?: $(grep 'with drain' $O/rate-$n-$b-$k.log | awk '{printf "%s %s %s | ", $1, $(NF-8), $(NF-1)}')"
	done
	for m in new:32 w96:32 w96:96; do
		n=${m%:*} b=${m#*:} B=/tmp/gn/b; [ $n = w96 ] && B=/tmp/gw/b
		timeout -s KILL 40 $B/bench/gic/gic lat --path gda-inline --engine-batch $b > $O/lat-$n-$b-$k.log 2>&1
		echo "  $n lat b$b rc $?: $(grep -E 'put\+completion|rtt' $O/lat-$n-$b-$k.log | head -2 | awk '{printf "%s %s %s %s | ", $3, $4, $5, $6}')"
	done
done
grep -hE 'wrong|later|did not' $O/*.log | head -5
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c5.tgz c5 && rm -rf c5
