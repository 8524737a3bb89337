#!/bin/bash
# Call 3: the committed engine's one-QP drain under ncu (on-demand engine, prof/drain_prof.cu).
cd "$(dirname "$0")/../.." || exit 1
mkdir -p /tmp/p && tar xJf devbin14/prof.txz -C /tmp/p
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t3; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
timeout -s KILL 60 /tmp/p/drain_prof 4 2>&1 | tail -4
which ncu || ls /opt/nvidia/nsight-compute/*/ncu
NCU=$(which ncu || ls /opt/nvidia/nsight-compute/*/ncu | head -1)
timeout -s KILL 300 $NCU --clock-control none -k regex:snx_gpu_engine -s 1 -c 1 \
	--section WarpStateStats --section SourceCounters --section InstructionStats --section SchedulerStats \
	--metrics smsp__inst_executed.sum,smsp__cycles_active.max,sm__cycles_elapsed.max \
	-o $O/p0 /tmp/p/drain_prof 3 > $O/ncu.log 2>&1; echo "ncu rc $?"; tail -5 $O/ncu.log
$NCU -i $O/p0.ncu-rep --page details > $O/details.txt 2>&1
grep -E 'inst_executed|cycles_active|cycles_elapsed|Stall|Issued|Eligible|Active Warps|Warp Cycles|No Eligible' $O/details.txt | head -40
$NCU -i $O/p0.ncu-rep --page source --csv --print-source sass > $O/sass.csv 2>&1; wc -l $O/sass.csv; head -2 $O/sass.csv | cut -c1-600
cd $OUT && tar czf t3.tgz t3 && rm -rf t3
