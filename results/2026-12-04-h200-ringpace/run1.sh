#!/bin/bash
# Call 1 (eighteenth session's call 10, with traces): the paced ringer
# (alone-ringpace, 32 WQEs rung per DRAIN_PACE_NS 1115) ringing every 1, 2,
# 4, 16, 64 rounds (DRAIN_RING_EVERY), batch 64 and 32; then the engine's
# trace of alone-warpfill (rung once), ringpace every 1 and every 512 (the
# last round only: the same spin, one ring), per step transition.
cd "$(dirname "$0")/../.." || exit 1
D=$(pwd)/results/2026-12-04-h200-ringpace
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c1; mkdir -p $O /tmp/gs && tar xJf devbin19/slots.txz -C /tmp/gs
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for b in 64 32; do for e in 1 2 4 16 64; do
	DRAIN_RING_EVERY=$e DRAIN_PACE_NS=1115 DRAIN_BATCH=$b timeout -s KILL 60 /tmp/gs/b/drain_slots 4 1 alone-ringpace > $O/e$e-$b.log 2>&1
	echo "b$b every $e rc $?: $(grep ' round ' $O/e$e-$b.log | grep -o '[0-9.]* us ([0-9.]* M msg/s)' | tail -3 | tr '\n' ' ') $(grep -c 'bad payloads 0' $O/e$e-$b.log) clean"
done; done
for m in alone-warpfill:1 alone-ringpace:1 alone-ringpace:512; do
	mode=${m%:*} e=${m#*:}
	GIC_SOFTNIC_GPU_TRACE=20000 DRAIN_TRACE_OUT=$O/tr-$mode-$e.csv DRAIN_RING_EVERY=$e DRAIN_BATCH=64 \
		timeout -s KILL 60 /tmp/gs/b/drain_slots 2 1 $mode > $O/tr-$mode-$e.log 2>&1
	echo "trace $mode every $e rc $?: $(grep ' round ' $O/tr-$mode-$e.log | grep -o '[0-9.]* us ([0-9.]* M msg/s)' | tr '\n' ' ')"
	bash $D/trsum.sh $O/tr-$mode-$e.csv 2>&1 | tee $O/tr-$mode-$e.sum | awk '$3 > 20 || /passes/'
done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c1.tgz c1 && rm -rf c1
