#!/bin/bash
# Call 4: the persistent engine alone at GPU scope (prof/drain_alone.cu: the ring
# filled first, rung once, timed to the last CQE), committed vs wide (w2a), with
# 64 one-warp engine blocks (as gic rate) and with 1.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t4; mkdir -p $O
tar xJf devbin15/alone.txz -C /tmp
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for k in 1 2; do for b in 64 1; do for v in base w2a; do
	timeout -s KILL 60 /tmp/dp/alone_$v 6 $b > $O/alone-$v-$b-$k.log 2>&1
	echo "$v blocks $b rc $? $(grep round $O/alone-$v-$b-$k.log | tail -4 | awk '{printf "%s ", $9}')"
done; done; done
grep -h 'bad payloads [1-9]\|err [1-9]' $O/*.log | head -3
cd $OUT && tar czf t4.tgz t4 && rm -rf t4
