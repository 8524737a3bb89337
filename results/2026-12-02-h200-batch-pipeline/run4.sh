#!/bin/bash
# Call 4: the merged engine (variant p, as committed): the one-QP drain under ncu
# (prof/drain_prof.cu, p's engine), then the GPU test runner on the merged build.
cd "$(dirname "$0")/../.." || exit 1
mkdir -p /tmp/p /tmp/g && tar xJf devbin14/prof.txz -C /tmp/p && tar xJf devbin14/g.txz -C /tmp/g
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t4; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
timeout -s KILL 60 /tmp/p/drain_prof_p 4 2>&1 | tail -4
timeout -s KILL 300 ncu --clock-control none -k regex:snx_gpu_engine -s 1 -c 1 \
	--section WarpStateStats --section SourceCounters --section InstructionStats --section SchedulerStats \
	--metrics smsp__inst_executed.sum,smsp__cycles_active.max,sm__cycles_elapsed.max \
	-o $O/p1 /tmp/p/drain_prof_p 3 > $O/ncu.log 2>&1; echo "ncu rc $?"
ncu -i $O/p1.ncu-rep --page details > $O/details.txt 2>&1
grep -E 'inst_executed|cycles_active|Warp Cycles Per Issued' $O/details.txt | head
ncu -i $O/p1.ncu-rep --page source --csv --print-source sass > $O/sass.csv 2>&1
rm -f $O/p1.ncu-rep
for k in 1 2; do
	timeout -s KILL 60 /tmp/g/b/bench/gic/gic rate --row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16 > $O/rate$k.log 2>&1
	grep "with drain" $O/rate$k.log | awk '{print "  " $1, $3, $4, $5, $6, $7, $8}'
done
timeout -s KILL 60 /tmp/g/b/bench/gic/gic lat --path gda-inline > $O/lat.log 2>&1
grep -E 'put\+completion|rtt' $O/lat.log | head -2 | cut -c1-130
GIC_GPU_BIN=/tmp/g/b OUT=$O/gpu timeout -s KILL 420 bash scripts/gpu-test.sh 2>&1 | grep -E '^(FAIL|SKIP)|passed' | tail -30
cd $OUT && tar czf t4.tgz t4 && rm -rf t4
