#!/bin/bash
# Call 5: prof/drain_alone.cu again, the engine alone (ring filled, rung once)
# and with the rate row's warp poster running beside it ("conc"), committed
# vs wide (w2a), 64 one-warp engine blocks; the engine's counters per round.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t5; mkdir -p $O
tar xJf devbin15/alone.txz -C /tmp
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for k in 1 2; do for m in alone conc; do for v in base w2a; do
	a=; [ $m = conc ] && a=conc
	timeout -s KILL 60 /tmp/dp/alone_$v 6 64 $a > $O/$m-$v-$k.log 2>&1
	echo "$m $v rc $? $(grep round $O/$m-$v-$k.log | tail -3 | sed 's/.*(\([0-9.]*\) M msg.*stalls \([0-9]*\) doorbell_watches \([0-9]*\)/\1 s\2 w\3/' | tr '\n' ' ')"
done; done; done
grep -h 'bad payloads [1-9]\|err [1-9]' $O/*.log | head -3
cd $OUT && tar czf t5.tgz t5 && rm -rf t5
