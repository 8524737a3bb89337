#!/bin/bash
# Call 3: is the one-QP drain's loss beside a poster the address pattern of
# the payloads? prof/drain_slots.cu (built here against 4cacc9a's engine
# library) with both batch widths: the prefilled ring with contiguous and
# with thread-major slots, the rate row's poster with thread-major and with
# contiguous slots; then gic rate's row on build a for the instance.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c3; mkdir -p $O /tmp/gs /tmp/ga && tar xJf devbin17/slots.txz -C /tmp/gs && tar xJf devbin17/a.txz -C /tmp/ga
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for k in 1 2; do for b in 32 64; do for m in alone alone-tm conc-wide conc-wide-cm; do
	DRAIN_BATCH=$b timeout -s KILL 60 /tmp/gs/b/drain_slots 4 64 $m > $O/slots-$m-$b-$k.log 2>&1
	echo "b$b $m rc $?: $(grep -o '([0-9.]* M msg/s)' $O/slots-$m-$b-$k.log | tail -3 | tr '\n' ' ') $(grep -c 'bad payloads 0' $O/slots-$m-$b-$k.log) clean"
done; done; done
timeout -s KILL 90 /tmp/ga/b/bench/gic/gic rate --engine-batch 64 --row t32-q1-warp > $O/rate.log 2>&1
echo "rate b64 rc $?: $(grep 't32-q1-warp' $O/rate.log | awk '{printf "%s %s | ", $(NF-8), $(NF-1)}')"
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
