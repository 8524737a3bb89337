#!/bin/bash
# Call 9: prof/drain_slots.cu built with -DDRAIN_N=8160 (half the ring per
# round): the prefilled drain alone, beside a writer into the ring's other
# half (with the poster's fence), and the real poster. Batch 64 and 32,
# one engine warp.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c9; mkdir -p $O /tmp/gh && tar xJf devbin17/half.txz -C /tmp/gh
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for b in 64 32; do for m in alone alone-noise-ring alone-noise-fence conc-wide; do
	DRAIN_BATCH=$b timeout -s KILL 60 /tmp/gh/b/drain_half 5 1 $m > $O/h-$m-$b.log 2>&1
	echo "b$b $m rc $?: $(grep -o '([0-9.]* M msg/s)' $O/h-$m-$b.log | tail -4 | tr '\n' ' ') $(grep -c 'bad payloads 0' $O/h-$m-$b.log) clean $(grep -E 'noise:|poster:|setup' $O/h-$m-$b.log | tail -1)"
done; done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c9.tgz c9 && rm -rf c9
