#!/bin/bash
# Sixteenth session, call 1: does the wide batch's payload failure of call 8
# (../2026-12-03-h200-engine-batch/) come back? engine-batch.patch applied,
# gic rate's payload check now says how many messages were wrong, what they
# held, and whether they were right 200 ms later (late vs lost).
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c1; mkdir -p $O /tmp/g && tar xJf devbin16/c1.txz -C /tmp/g
G=/tmp/g/b/bench/gic/gic
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
timeout -s KILL 100 /tmp/g/b/gic-gpu-engine-check 64 > $O/check64.log 2>&1; echo "check64 rc $? $(tail -1 $O/check64.log)"
rows="--row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16 --row t64-q64-s1-b16 --row t16-q16-s16-b16 --row t256-q1-handoff"
for k in 1 2 3; do for b in 64 32; do
	[ $b = 32 ] && [ $k = 3 ] && continue
	timeout -s KILL 90 $G rate --engine-batch $b $rows > $O/rate-$b-$k.log 2>&1
	echo "b$b k$k rc $?: $(grep 'with drain' $O/rate-$b-$k.log | awk '{printf "%s %s %s | ", $1, $6, $7}')"
	grep -E 'wrong|later|error|rror' $O/rate-$b-$k.log | head -8
done; done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
