#!/bin/bash
# Call 6: scan2 (915087b with the first WQE's BB read by lane 0 in its
# scan right after the doorbell's acquire, lane_scan, for a pass whose QP
# lane 0 scanned) against 915087b's build (final): the GPU test runner and
# gic suite --quick on scan2, then lat, pipeline and rate side by side,
# three times.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c6; mkdir -p $O /tmp/gb /tmp/gf && tar xJf devbin18/final.txz -C /tmp/gb && tar xJf devbin18/scan2.txz -C /tmp/gf
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
GIC_GPU_BIN=/tmp/gf/b OUT=$O/gpu timeout -s KILL 300 bash scripts/gpu-test.sh 2>&1 | grep -E '^(FAIL|SKIP)|passed' | tail -6
pkill -9 -f gic-gpu 2>/dev/null
timeout -s KILL 60 /tmp/gf/b/gic-gpu-conformance rkey_zero_after_drop > $O/key0.log 2>&1; echo "key0 rc $?: $(grep rkey_zero $O/key0.log)"
timeout -s KILL 300 /tmp/gf/b/bench/gic/gic suite --quick --json $O/qsuite.json > $O/qsuite.log 2>&1; echo "suite rc $?: rows $(grep -o '"validated": [a-z]*' $O/qsuite.json | wc -l), invalid $(grep -o '"validated": false' $O/qsuite.json | wc -l)"
for k in 1 2 3; do for n in final scan2; do
	B=/tmp/gb/b; [ $n = scan2 ] && B=/tmp/gf/b
	timeout -s KILL 40 $B/bench/gic/gic lat --path gda-inline > $O/lat-$n-$k.log 2>&1
	echo "$n lat rc $?: $(grep -E 'put\+completion|rtt' $O/lat-$n-$k.log | head -2 | awk '{printf "%s %s %s %s | ", $3, $4, $5, $6}')"
	timeout -s KILL 40 $B/bench/gic/gic lat --path gda-inline --engine-sms 16 > $O/lat16-$n-$k.log 2>&1
	echo "  sms16 rc $?: $(grep -E 'put\+completion|rtt' $O/lat16-$n-$k.log | head -2 | awk '{printf "%s %s %s %s | ", $3, $4, $5, $6}')"
	timeout -s KILL 60 $B/gic-gpu-pipeline -n 1000 > $O/pipe-$n-$k.log 2>&1
	echo "  pipe rc $?: $(grep -E 'issue|stored -> seen|put\+completion|seen -> record|record read -> WQE|WQE read -> key|key checked -> CQ|claimed -> data|moved -> CQE|CQE written -> seen|seen -> poll|seen -> CQE written|trace check' $O/pipe-$n-$k.log | awk '{printf "%s %s | ", $(NF-3), $(NF-2)}')"
	timeout -s KILL 90 $B/bench/gic/gic rate --row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16 --row t1-q1-b16 > $O/rate-$n-32-$k.log 2>&1
	echo "  b32 rc $?: $(grep 'with drain' $O/rate-$n-32-$k.log | awk '{printf "%s %s %s | ", $1, $(NF-8), $(NF-1)}')"
	timeout -s KILL 90 $B/bench/gic/gic rate --engine-batch 64 --row t32-q1-warp --row t256-q1-warp > $O/rate-$n-64-$k.log 2>&1
	echo "  b64 rc $?: $(grep 'with drain' $O/rate-$n-64-$k.log | awk '{printf "%s %s %s | ", $1, $(NF-8), $(NF-1)}')"
done; done
grep -hE 'wrong|later|did not' $O/*.log | head -5
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c6.tgz c6 && rm -rf c6
