#!/bin/bash
# Call 4: the engine's own trace of the one-QP drain, alone and beside the
# rate row's poster (prof/drain_slots.cu, one engine warp, batch 64, 2
# rounds each, 4000 WQEs' worth of records), then the same untraced for
# the trace's cost; CSVs under tr/.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c4; mkdir -p $O/tr /tmp/gs && tar xJf devbin17/slots.txz -C /tmp/gs
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for m in alone conc-wide alone-tm; do
	GIC_SOFTNIC_GPU_TRACE=4000 DRAIN_TRACE_OUT=$O/tr/$m.csv DRAIN_BATCH=64 timeout -s KILL 60 /tmp/gs/b/drain_slots 2 1 $m > $O/tr-$m.log 2>&1
	echo "traced $m rc $?: $(grep -o '([0-9.]* M msg/s)' $O/tr-$m.log | tr '\n' ' ') $(grep -c 'bad payloads 0' $O/tr-$m.log) clean; $(grep trace: $O/tr-$m.log)"
	DRAIN_BATCH=64 timeout -s KILL 60 /tmp/gs/b/drain_slots 3 1 $m > $O/un-$m.log 2>&1
	echo "untraced $m rc $?: $(grep -o '([0-9.]* M msg/s)' $O/un-$m.log | tr '\n' ' ')"
done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
