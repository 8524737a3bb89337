#!/bin/bash
# Call 1: the first WQE's BB read by the scanning lane right after the
# doorbell's acquire (build scan) against the build before it (base,
# 23f8a68's code): the GPU test runner on scan, then gic lat,
# gic-gpu-pipeline and gic rate's one-QP rows side by side, twice.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c1; mkdir -p $O /tmp/gb /tmp/gs && tar xJf devbin18/base.txz -C /tmp/gb && tar xJf devbin18/scan.txz -C /tmp/gs
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
t0=$(date +%s)
GIC_GPU_BIN=/tmp/gs/b OUT=$O/gpu timeout -s KILL 300 bash scripts/gpu-test.sh 2>&1 | grep -E '^(FAIL|SKIP)|passed' | tail -6
echo "gpu-test $(( $(date +%s) - t0 )) s"
pkill -9 -f gic-gpu 2>/dev/null
rows="--row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16 --row t1-q1-b16"
for k in 1 2; do for n in base scan; do
	B=/tmp/gb/b; [ $n = scan ] && B=/tmp/gs/b
	timeout -s KILL 40 $B/bench/gic/gic lat --path gda-inline > $O/lat-$n-$k.log 2>&1
	echo "$n lat rc $?: $(grep -E 'put\+completion|rtt' $O/lat-$n-$k.log | head -2 | awk '{printf "%s %s %s | ", $3, $4, $5}')"
	timeout -s KILL 60 $B/gic-gpu-pipeline -n 1000 > $O/pipe-$n-$k.log 2>&1
	echo "  pipe rc $?: $(grep -E 'put\+completion|stored -> seen|seen -> record|record read -> WQE|seen -> CQE written|trace check' $O/pipe-$n-$k.log | awk '{printf "%s | ", $0}' | tr -s ' ')"
	for b in 32 64; do
	timeout -s KILL 90 $B/bench/gic/gic rate --engine-batch $b $rows > $O/rate-$n-$b-$k.log 2>&1
	echo "  b$b rc $?: $(grep 'with drain' $O/rate-$n-$b-$k.log | awk '{printf "%s %s %s | ", $1, $(NF-8), $(NF-1)}')"
	done
done; done
grep -hE 'wrong|later|did not' $O/*.log | head -5
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
