#!/bin/bash
# Call 2: (1) the engine's layout under gic lat: the fixture's default 4
# blocks x 4 warps against 16 x 1 (each QP's warp alone on an SM) and
# 1 x 2 (both QPs' warps on one SM), through a diagnostic env var of the
# carried builds (GIC_DIAG_ENGINE_GEOM, not committed); (2) a pass that
# finds one prefetched one-BB inline write executes it on lane 0 alone
# (build solo) against the engine before it (build geom, 23f8a68's engine):
# the GPU test runner on solo, then lat, pipeline and rate side by side.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c2; mkdir -p $O /tmp/gg /tmp/gs && tar xJf devbin18/geom.txz -C /tmp/gg && tar xJf devbin18/solo.txz -C /tmp/gs
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
t0=$(date +%s)
GIC_GPU_BIN=/tmp/gs/b OUT=$O/gpu timeout -s KILL 300 bash scripts/gpu-test.sh 2>&1 | grep -E '^(FAIL|SKIP)|passed' | tail -6
echo "gpu-test $(( $(date +%s) - t0 )) s"
pkill -9 -f gic-gpu 2>/dev/null
for g in def 16,1 1,2 def 16,1; do for n in geom solo; do
	B=/tmp/gg/b; [ $n = solo ] && B=/tmp/gs/b
	if [ $g = def ]; then unset GIC_DIAG_ENGINE_GEOM; else export GIC_DIAG_ENGINE_GEOM=$g; fi
	f=$O/$n-${g/,/x}
	for k in 1 2; do
	timeout -s KILL 40 $B/bench/gic/gic lat --path gda-inline > $f-lat$k.log 2>&1
	echo "$g $n lat rc $?: $(grep -E 'put\+completion|rtt' $f-lat$k.log | head -2 | awk '{printf "%s %s %s | ", $3, $4, $5}')"
	done
	timeout -s KILL 60 $B/gic-gpu-pipeline -n 1000 > $f-pipe.log 2>&1
	echo "  pipe rc $?: $(grep -E 'put\+completion|seen -> record|record read -> WQE|WQE read -> key|key checked -> CQ|claimed -> data|moved -> CQE|seen -> CQE written|trace check' $f-pipe.log | awk '{printf "%s %s | ", $(NF-3), $(NF-2)}')"
done; done
unset GIC_DIAG_ENGINE_GEOM
rows="--row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16 --row t1-q1-b16"
for n in geom solo; do
	B=/tmp/gg/b; [ $n = solo ] && B=/tmp/gs/b
	for b in 32 64; do
	timeout -s KILL 90 $B/bench/gic/gic rate --engine-batch $b $rows > $O/rate-$n-$b.log 2>&1
	echo "$n b$b rc $?: $(grep 'with drain' $O/rate-$n-$b.log | awk '{printf "%s %s %s | ", $1, $(NF-8), $(NF-1)}')"
	done
done
grep -hE 'wrong|later|did not' $O/*.log | head -5
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
