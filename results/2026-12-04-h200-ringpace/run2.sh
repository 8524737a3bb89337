#!/bin/bash
# Call 2: drain_watch (drain_slots with a CQ watcher): when the engine
# writes its CQEs, against the round's end (the poster's quiet), in each
# mode: alone (one ring, quiet meanwhile), alone-warpfill, alone-ringpace
# (pace 1115 and 0), conc-wide (the rate row's poster, wide quiet), conc.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c2; mkdir -p $O /tmp/gs && tar xJf devbin19/watch.txz -C /tmp/gs
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for b in 64 32; do for m in alone alone-warpfill alone-ringpace:1115 alone-ringpace:0 conc-wide conc; do
	[ $b = 32 ] && case $m in alone-warpfill|alone-ringpace:0|conc) continue;; esac
	mode=${m%:*}; p=1115; [ "$mode" != "$m" ] && p=${m#*:}
	DRAIN_PACE_NS=$p DRAIN_BATCH=$b timeout -s KILL 60 /tmp/gs/b/drain_watch 4 1 $mode > $O/$mode-$p-$b.log 2>&1
	echo "== b$b $m rc $? clean $(grep -c 'bad payloads 0' $O/$mode-$p-$b.log)"
	grep -E ' round [23]|engine:|poster:' $O/$mode-$p-$b.log | tail -5 | sed -E 's/err 0, bad payloads 0; //; s/ cqes [0-9]+ cq_full_stalls 0 doorbell_watches 0//'
done; done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c2.tgz c2 && rm -rf c2
