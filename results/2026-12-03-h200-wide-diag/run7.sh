#!/bin/bash
# Call 7: a pass that reads the doorbell record again after a drain
# (pass_extend) against the build before it (c6, HEAD 11b72cc): the GPU test
# runner on the new build, gic rate rows and lat side by side, and every
# rate row on the new build with both batch widths.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c7; mkdir -p $O /tmp/g6 /tmp/g7 && tar xJf devbin16/c6.txz -C /tmp/g6 && tar xJf devbin16/c7.txz -C /tmp/g7
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
GIC_GPU_BIN=/tmp/g7/b OUT=$O/gpu timeout -s KILL 360 bash scripts/gpu-test.sh 2>&1 | grep -E '^(FAIL|SKIP)|passed' | tail -6
pkill -9 -f gic-gpu 2>/dev/null
rows="--row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16 --row t16-q16-s16-b16 --row t1-q1-b16 --row t4096-q16-s16-cta --row t256-q1-handoff"
for k in 1 2; do for v in old:32 new:32 old:64 new:64; do
	n=${v%:*}; b=${v#*:}; G=/tmp/g6/b/bench/gic/gic; [ $n = new ] && G=/tmp/g7/b/bench/gic/gic
	timeout -s KILL 90 $G rate --engine-batch $b $rows > $O/rate-$n-$b-$k.log 2>&1
	echo "$n b$b rc $?: $(grep 'with drain' $O/rate-$n-$b-$k.log | awk '{printf "%s %s %s | ", $1, $6, $(NF-1)}')"
	timeout -s KILL 40 $G lat --engine-batch $b --path gda-inline > $O/lat-$n-$b-$k.log 2>&1
	echo "  lat: $(grep -E 'put\+completion|rtt' $O/lat-$n-$b-$k.log | head -2 | awk '{printf "%s %s %s | ", $3, $4, $5}')"
done; done
for b in 32 64; do
	timeout -s KILL 250 /tmp/g7/b/bench/gic/gic rate --engine-batch $b --row all > $O/all-$b.log 2>&1
	echo "all b$b rc $?: $(grep -c ' yes ' $O/all-$b.log) yes, $(grep -c ' NO ' $O/all-$b.log) NO; $(grep -E '^t32-q1-warp-wrap|^t256-q1-warp-wrap' $O/all-$b.log | awk '{printf "%s %s %s; ", $1, $(NF-8), $(NF-1)}')"
done
grep -hE 'wrong|later|did not' $O/*.log | head -5
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c7.tgz c7 && rm -rf c7
