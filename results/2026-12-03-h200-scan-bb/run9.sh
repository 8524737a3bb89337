#!/bin/bash
# Call 9: the one-QP drain over a prefilled ring rung round by round at the
# poster's pace with the poster's doorbell sequence, nothing written
# meanwhile (drain_slots alone-ringpace, DRAIN_PACE_NS 1115; and 0, as fast
# as the ringer goes), beside alone-warpfill (one doorbell) and conc-wide.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c9; mkdir -p $O /tmp/gs && tar xJf devbin18/slots.txz -C /tmp/gs
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for b in 64 32; do for m in alone-warpfill pace-1115 pace-0 pace-2000 conc-wide; do
	case $m in pace-*) export DRAIN_PACE_NS=${m#pace-}; mm=alone-ringpace;; *) unset DRAIN_PACE_NS; mm=$m;; esac
	DRAIN_BATCH=$b timeout -s KILL 60 /tmp/gs/b/drain_slots 4 1 $mm > $O/$m-$b.log 2>&1
	echo "b$b $m rc $?: $(grep ' round ' $O/$m-$b.log | grep -o '[0-9.]* us ([0-9.]* M msg/s)' | tail -3 | tr '\n' ' ') $(grep -c 'bad payloads 0' $O/$m-$b.log) clean"
done; done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c9.tgz c9 && rm -rf c9
