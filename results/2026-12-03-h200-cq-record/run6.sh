#!/bin/bash
# Call 6: call 5 again with the poster's stamps in device memory (call 5's
# were managed: the device's first store after the host's read faulted and
# stalled the poster), then one traced run with the stamps beside the
# engine's trace.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c6; mkdir -p $O/tr /tmp/gs && tar xJf devbin17/slots.txz -C /tmp/gs
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for b in 64 32; do for bl in 1 64; do for m in conc-wide; do
	DRAIN_BATCH=$b timeout -s KILL 60 /tmp/gs/b/drain_slots 5 $bl $m > $O/p-$m-$b-$bl.log 2>&1
	echo "b$b blocks $bl $m rc $?:"; grep -E 'round|poster' $O/p-$m-$b-$bl.log | sed -E 's/, err.*//; s/first post to last CQE//' | paste - - | tail -4
done; done; done
GIC_SOFTNIC_GPU_TRACE=4000 DRAIN_TRACE_OUT=$O/tr/conc-wide.csv DRAIN_BATCH=64 timeout -s KILL 60 /tmp/gs/b/drain_slots 2 1 conc-wide > $O/tr.log 2>&1
echo "traced rc $?:"; grep -E 'round|poster' $O/tr.log | sed -E 's/, err.*//; s/first post to last CQE//' | paste - -
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c6.tgz c6 && rm -rf c6
