#!/bin/bash
# Call 10: the engine's passes beside the poster. prof/drain_slots.cu linked
# against an engine built with -DSNX_TRACE_PASS_ONLY (a diagnostic build:
# only the doorbell-seen, record, pass-end and serial steps are stamped),
# one engine warp, 3 rounds; traced and untraced, batch 64 and 32; CSVs
# under tr/.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c10; mkdir -p $O/tr /tmp/gp && tar xJf devbin17/passes.txz -C /tmp/gp
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for b in 64 32; do for m in conc-wide alone; do
	GIC_SOFTNIC_GPU_TRACE=20000 DRAIN_TRACE_OUT=$O/tr/$m-$b.csv DRAIN_BATCH=$b timeout -s KILL 60 /tmp/gp/b/drain_passes 3 1 $m > $O/t-$m-$b.log 2>&1
	echo "traced b$b $m rc $?: $(grep -o '([0-9.]* M msg/s)' $O/t-$m-$b.log | tr '\n' ' ') $(grep -c 'bad payloads 0' $O/t-$m-$b.log) clean; $(grep -E 'trace:' $O/t-$m-$b.log)"
	DRAIN_BATCH=$b timeout -s KILL 60 /tmp/gp/b/drain_passes 3 1 $m > $O/u-$m-$b.log 2>&1
	echo "untraced b$b $m rc $?: $(grep -o '([0-9.]* M msg/s)' $O/u-$m-$b.log | tr '\n' ' ')"
done; done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c10.tgz c10 && rm -rf c10
