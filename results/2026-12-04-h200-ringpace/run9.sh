#!/bin/bash
# Call 13: where the latency's run-to-run spread lives: gic-gpu-pipeline
# -n 1000 ten times (each a process: its steps' p50) and gic lat eight
# times, on final (the default kernel, unchanged by this session).
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c13; mkdir -p $O /tmp/gf && tar xJf devbin19/final.txz -C /tmp/gf
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
p() { grep -F "$2" $1 | head -1 | awk '{print $(NF-2)}'; }
for k in $(seq 1 10); do
	timeout -s KILL 60 /tmp/gf/b/gic-gpu-pipeline -n 1000 > $O/pipe-$k.log 2>&1
	f=$O/pipe-$k.log
	echo "pipe $k rc $?: p+c(off) $(grep 'put+completion' $f | tail -1 | awk '{print $(NF-2)}') stored->seen $(p $f 'doorbell stored -> seen') seen->CQE $(p $f 'seen -> CQE written') CQE->seen $(p $f 'CQE written -> seen') crossings $(p $f 'both crossings') poll $(p $f 'CQE seen -> poll returned')"
done
for k in $(seq 1 8); do
	timeout -s KILL 40 /tmp/gf/b/bench/gic/gic lat --path gda-inline > $O/lat-$k.log 2>&1
	echo "lat $k rc $?: $(grep -E 'put\+completion|rtt' $O/lat-$k.log | head -2 | awk '{printf "%s %s %s | ", $3, $4, $5}')"
done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c13.tgz c13 && rm -rf c13
