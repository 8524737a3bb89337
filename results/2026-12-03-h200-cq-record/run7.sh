#!/bin/bash
# Call 7: does a writer that touches nothing of the QP slow the drain? The
# prefilled ring drained alone, beside a warp writing as the poster does
# (with and without its fence), and beside the real poster; batch 64 and
# 32, 64 engine warps and one.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c7; mkdir -p $O /tmp/gs && tar xJf devbin17/slots.txz -C /tmp/gs
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for b in 64 32; do for bl in 64 1; do for m in alone alone-noise-store alone-noise-fence conc-wide; do
	DRAIN_BATCH=$b timeout -s KILL 60 /tmp/gs/b/drain_slots 4 $bl $m > $O/n-$m-$b-$bl.log 2>&1
	echo "b$b blocks $bl $m rc $?: $(grep -o '([0-9.]* M msg/s)' $O/n-$m-$b-$bl.log | tail -3 | tr '\n' ' ') $(grep -c 'bad payloads 0' $O/n-$m-$b-$bl.log) clean $(grep -E 'noise:|poster:' $O/n-$m-$b-$bl.log | tail -1)"
done; done; done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c7.tgz c7 && rm -rf c7
