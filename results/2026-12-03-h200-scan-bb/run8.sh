#!/bin/bash
# Call 8: the one-QP drain beside its poster, with the poster kept ahead:
# prof/drain_slots.cu (../2026-12-03-h200-cq-record/prof/, built against
# 915087b's engine library) conc-wide-lead, whose first DRAIN_LEAD rounds
# are rung once after the last of them, so that the engine never reads a
# WQE written less than that long ago; beside alone-tm and conc-wide.
# Batch 64 and 32, one-warp engine blocks, 4 rounds (the last 3 shown).
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c8; mkdir -p $O /tmp/gs && tar xJf devbin18/slots.txz -C /tmp/gs
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for b in 64 32; do for m in alone-tm conc-wide lead-32 lead-128 lead-256 lead-448; do
	case $m in lead-*) export DRAIN_LEAD=${m#lead-}; mm=conc-wide-lead;; *) unset DRAIN_LEAD; mm=$m;; esac
	DRAIN_BATCH=$b timeout -s KILL 60 /tmp/gs/b/drain_slots 4 1 $mm > $O/$m-$b.log 2>&1
	echo "b$b $m rc $?: $(grep ' round ' $O/$m-$b.log | grep -o '([0-9.]* M msg/s)' | tail -3 | tr '\n' ' ') $(grep -c 'bad payloads 0' $O/$m-$b.log) clean | $(grep -E 'lead .* rounds' $O/$m-$b.log | tail -3 | sed 's/.*rung at/rung at/' | tr '\n' ' ')"
done; done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c8.tgz c8 && rm -rf c8
