#!/bin/bash
# Call 10: call 9's paced ringer (alone-ringpace, DRAIN_PACE_NS 1115) ringing
# every 1, 2, 4, 16 and 64 rounds (DRAIN_RING_EVERY): per-doorbell cost, or
# the record moving at all?
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c10; mkdir -p $O /tmp/gs && tar xJf devbin18/slots.txz -C /tmp/gs
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for b in 64 32; do for e in 1 2 4 16 64; do
	DRAIN_RING_EVERY=$e DRAIN_PACE_NS=1115 DRAIN_BATCH=$b timeout -s KILL 60 /tmp/gs/b/drain_slots 4 1 alone-ringpace > $O/e$e-$b.log 2>&1
	echo "b$b every $e rc $?: $(grep ' round ' $O/e$e-$b.log | grep -o '[0-9.]* us ([0-9.]* M msg/s)' | tail -3 | tr '\n' ' ') $(grep -c 'bad payloads 0' $O/e$e-$b.log) clean"
done; done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c10.tgz c10 && rm -rf c10
