#!/bin/bash
# Call 3: build solo2 (solo_write with the cached-key resolve, the parked-CQ
# claim, warp_steps; snx_mr_resolve_in looks key 0 up always; conformance
# case rkey_zero_after_drop) against geom (23f8a68's engine). First the new
# case on the engine without the key-0 fix (nofix: expected to FAIL), then
# the GPU test runner on solo2, lat/pipeline/rate side by side, and
# gic suite --quick on solo2.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c3; mkdir -p $O /tmp/gg /tmp/gs /tmp/gn
tar xJf devbin18/geom.txz -C /tmp/gg && tar xJf devbin18/solo2.txz -C /tmp/gs && tar xJf devbin18/nofix.txz -C /tmp/gn
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
timeout -s KILL 60 /tmp/gn/b/gic-gpu-conformance rkey_zero_after_drop > $O/nofix.log 2>&1; echo "nofix rc $?: $(grep -E 'ok|FAIL|wrote|expected|got' $O/nofix.log | head -4 | tr '\n' ' ')"
timeout -s KILL 60 /tmp/gs/b/gic-gpu-conformance rkey_zero_after_drop > $O/fix.log 2>&1; echo "fix rc $?: $(head -3 $O/fix.log | tr '\n' ' ')"
t0=$(date +%s)
GIC_GPU_BIN=/tmp/gs/b OUT=$O/gpu timeout -s KILL 300 bash scripts/gpu-test.sh 2>&1 | grep -E '^(FAIL|SKIP)|passed' | tail -6
echo "gpu-test $(( $(date +%s) - t0 )) s"
pkill -9 -f gic-gpu 2>/dev/null
for k in 1 2 3; do for n in geom solo2; do
	B=/tmp/gg/b; [ $n = solo2 ] && B=/tmp/gs/b
	timeout -s KILL 40 $B/bench/gic/gic lat --path gda-inline > $O/lat-$n-$k.log 2>&1
	echo "$n lat rc $?: $(grep -E 'put\+completion|rtt' $O/lat-$n-$k.log | head -2 | awk '{printf "%s %s %s | ", $3, $4, $5}')"
	timeout -s KILL 60 $B/gic-gpu-pipeline -n 1000 > $O/pipe-$n-$k.log 2>&1
	echo "  pipe rc $?: $(grep -E 'put\+completion|seen -> record|record read -> WQE|WQE read -> key|key checked -> CQ|claimed -> data|moved -> CQE|seen -> CQE written|trace check' $O/pipe-$n-$k.log | awk '{printf "%s %s | ", $(NF-3), $(NF-2)}')"
done; done
rows="--row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16 --row t1-q1-b16"
for k in 1 2; do for n in geom solo2; do
	B=/tmp/gg/b; [ $n = solo2 ] && B=/tmp/gs/b
	for b in 32 64; do
	timeout -s KILL 90 $B/bench/gic/gic rate --engine-batch $b $rows > $O/rate-$n-$b-$k.log 2>&1
	echo "$n b$b rc $?: $(grep 'with drain' $O/rate-$n-$b-$k.log | awk '{printf "%s %s %s | ", $1, $(NF-8), $(NF-1)}')"
	done
done; done
t0=$(date +%s)
timeout -s KILL 300 /tmp/gs/b/bench/gic/gic suite --quick --json $O/qsuite.json > $O/qsuite.log 2>&1; echo "suite rc $? $(( $(date +%s) - t0 )) s: rows $(grep -o '"validated": [a-z]*' $O/qsuite.json | wc -l), invalid $(grep -o '"validated": false' $O/qsuite.json | wc -l), log FAIL/invalid lines $(grep -ciE 'invalid|FAIL' $O/qsuite.log)"
grep -hE 'wrong|later|did not' $O/*.log | head -5
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
