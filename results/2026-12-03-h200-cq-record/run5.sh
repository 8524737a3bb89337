#!/bin/bash
# Call 5: the poster's own stamps per posting round beside the engine
# (prof/drain_slots.cu with the stamps; untraced, batch 64 and 32, one and
# 64 engine warps): is there a stall of tens of microseconds in each round,
# as the traced call 4 showed after the first 160 WQEs of round 1?
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c5; mkdir -p $O /tmp/gs && tar xJf devbin17/slots.txz -C /tmp/gs
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for b in 64 32; do for bl in 1 64; do for m in conc-wide conc-wide-cm; do
	DRAIN_BATCH=$b timeout -s KILL 60 /tmp/gs/b/drain_slots 5 $bl $m > $O/p-$m-$b-$bl.log 2>&1
	echo "b$b blocks $bl $m rc $?:"; grep -E 'round|poster' $O/p-$m-$b-$bl.log | sed -E 's/, err.*//; s/first post to last CQE//' | paste - - | tail -4
done; done; done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c5.tgz c5 && rm -rf c5
