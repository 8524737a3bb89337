#!/bin/bash
# Call 2: which half moves what. base (4cacc9a), a (record at the order's
# scope + one-BB retire without the ctrl load), aA (the scope only), aB (the
# retire only); gic lat three times each, then base and a with the engine on
# 16 SMs of its own (--engine-sms 16), to tell SM sharing from the engine's
# own cycle.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c2; mkdir -p $O
for n in base a aA aB; do mkdir -p /tmp/g$n && tar xJf devbin17/$n.txz -C /tmp/g$n; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for k in 1 2 3; do for n in base a aA aB; do
	timeout -s KILL 40 /tmp/g$n/b/bench/gic/gic lat --path gda-inline > $O/lat-$n-$k.log 2>&1
	echo "$n rc $?: $(grep -E 'put\+completion|rtt' $O/lat-$n-$k.log | head -2 | awk '{printf "%s %s %s | ", $3, $4, $5}')"
done; done
for k in 1 2; do for n in base a; do
	timeout -s KILL 40 /tmp/g$n/b/bench/gic/gic lat --path gda-inline --engine-sms 16 > $O/sms-$n-$k.log 2>&1
	echo "$n sms16 rc $?: $(grep -E 'put\+completion|rtt' $O/sms-$n-$k.log | head -2 | awk '{printf "%s %s %s | ", $3, $4, $5}')"
done; done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
