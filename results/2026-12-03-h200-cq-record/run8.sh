#!/bin/bash
# Call 8: the prefilled drain beside a writer into the ring's unposted half
# (2^15-BB ring, the poster's fence), and beside a writer that stores the
# QP's doorbell record and word again with their values; alone and the
# real poster for the instance. Batch 64 and 32, one engine warp.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c8; mkdir -p $O /tmp/gs && tar xJf devbin17/slots.txz -C /tmp/gs
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for b in 64 32; do for m in alone alone-noise-ring alone-noise-db conc-wide; do
	DRAIN_BATCH=$b timeout -s KILL 60 /tmp/gs/b/drain_slots 4 1 $m > $O/n-$m-$b.log 2>&1
	echo "b$b $m rc $?: $(grep -o '([0-9.]* M msg/s)' $O/n-$m-$b.log | tail -3 | tr '\n' ' ') $(grep -c 'bad payloads 0' $O/n-$m-$b.log) clean $(grep -E 'noise:|poster:' $O/n-$m-$b.log | tail -1)"
done; done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c8.tgz c8 && rm -rf c8
