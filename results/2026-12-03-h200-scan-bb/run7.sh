#!/bin/bash
# Call 7: how often the merged build's round trip falls in each of its two
# groups: gic lat --path gda-inline 16 times (each a new process: new
# allocations, new block placement), p50 / p99 of put+completion and rtt.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c7; mkdir -p $O /tmp/gf && tar xJf devbin18/final.txz -C /tmp/gf
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for k in $(seq 1 16); do
	timeout -s KILL 40 /tmp/gf/b/bench/gic/gic lat --path gda-inline > $O/lat-$k.log 2>&1
	echo "$k rc $?: $(grep -E 'put\+completion|rtt' $O/lat-$k.log | head -2 | awk '{printf "%s %s %s | ", $3, $4, $5}')"
done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c7.tgz c7 && rm -rf c7
