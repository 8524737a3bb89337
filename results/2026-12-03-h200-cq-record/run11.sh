#!/bin/bash
# Call 11: is it how the poster writes the WQEs, or that it writes them
# while the engine drains? The ring filled by one warp as the rate row's
# poster writes it, nothing rung until the drain rings once
# (alone-warpfill), beside the one-thread fill (alone, alone-tm) and the
# real poster (conc-wide). Batch 64 and 32, one engine warp.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c11; mkdir -p $O /tmp/gs && tar xJf devbin17/slots.txz -C /tmp/gs
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for b in 64 32; do for m in alone alone-tm alone-warpfill conc-wide; do
	DRAIN_BATCH=$b timeout -s KILL 60 /tmp/gs/b/drain_slots 4 1 $m > $O/w-$m-$b.log 2>&1
	echo "b$b $m rc $?: $(grep -o '([0-9.]* M msg/s)' $O/w-$m-$b.log | tail -3 | tr '\n' ' ') $(grep -c 'bad payloads 0' $O/w-$m-$b.log) clean $(grep -E 'poster:|setup' $O/w-$m-$b.log | tail -1)"
done; done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c11.tgz c11 && rm -rf c11
