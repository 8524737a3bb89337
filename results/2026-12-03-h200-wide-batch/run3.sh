#!/bin/bash
# Call 3: the engine alone (prof/drain_prof of the fourteenth session, on-demand
# engine, 16352 pre-posted one-BB writes): committed engine vs wide batch (w2a),
# timed rounds, then ncu's instruction and cycle counts of one round each.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t3; mkdir -p $O
mkdir -p /tmp/dp && tar xJf devbin15/dp.txz -C /tmp
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for k in 1 2; do for v in base w2a; do
	timeout -s KILL 60 /tmp/dp/drain_$v 6 > $O/drain-$v-$k.log 2>&1
	echo "$v rc $? $(grep round $O/drain-$v-$k.log | tail -3 | awk '{printf "%s/%s ", $4, $6}')"
done; done
for v in base w2a; do
	timeout -s KILL 120 /usr/local/cuda/bin/ncu --clock-control none -k regex:snx_gpu_engine -s 1 -c 1 \
		--metrics smsp__inst_executed.sum,sm__cycles_active.max,smsp__average_warp_latency_issue_stalled_membar,smsp__average_warp_latency_issue_stalled_long_scoreboard \
		/tmp/dp/drain_$v 2 > $O/ncu-$v.log 2>&1
	echo "ncu $v rc $?"; grep -E 'inst_executed|cycles_active|stalled' $O/ncu-$v.log | awk '{print "  " $1, $NF}'
done
cd $OUT && tar czf t3.tgz t3 && rm -rf t3
