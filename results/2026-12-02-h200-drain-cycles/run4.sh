#!/bin/bash
# Call 4: as call 3, with the engine lifetime in ns (globaltimer) and cycles (the SM clock it ran at).
# longest busy scan; cyc0 = committed engine + sums, cyc8 = d8 + sums, d0 plain.
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null
mkdir -p /tmp/b && tar xJf devbin7/f.txz -C /tmp/b
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t4; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,compute_mode --format=csv,noheader
run() { local n=$1 lim=$2; shift 2; timeout -s KILL $lim "$@" > $O/$n.log 2>&1; local rc=$?; pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null; echo "$n rc $rc"; }
for k in 1 2; do for v in d0 cyc0 cyc8; do
	run rate-$v$k 60 /tmp/b/$v/gic rate --row t32-q1-warp
	grep "message rate" $O/rate-$v$k.log | awk -v v=$v '{print "  " v ": " $1, $3, $4, $5, $6, $7, $8}'
	grep '^cyc' $O/rate-$v$k.log | cut -c1-120
done; done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf t4.tgz t4 && rm -rf t4
