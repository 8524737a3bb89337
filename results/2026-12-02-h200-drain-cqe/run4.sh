#!/bin/bash
# Call 4: what bounds t32-q1-warp's drain? Diagnostic engines (not for use:
# each drops one safeguard) against the engine as committed (d0):
#   d1 no lane-overlap test, d2 no QP record re-read between batches,
#   d3 no fence before the CQE tail, d5 no remote-key lookup (raddr used
#   as the address), d8 all four. Then run3.sh (lat --procs 2 in GPU mode).
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null
mkdir -p /tmp/b && tar xJf devbin5/d.txz -C /tmp/b
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t4; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,compute_mode --format=csv,noheader
run() { local n=$1 lim=$2; shift 2; timeout -s KILL $lim "$@" > $O/$n.log 2>&1; local rc=$?; pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null; echo "$n rc $rc"; }
for k in 1 2; do for v in d0 d1 d2 d3 d5 d8; do
	run rate-$v$k 60 /tmp/b/d/$v/gic rate --row t32-q1-warp --row t256-q1-warp
	grep "message rate" $O/rate-$v$k.log | awk -v v=$v '{print "  " v ": " $1, $3, $4, $5, $6, $7, $8}'
	run pipe-$v$k 40 /tmp/b/d/$v/gic-gpu-pipeline --batch 500; grep "trace off" $O/pipe-$v$k.log | tail -1 | sed "s/^/  $v: /"
done; done
cd $OUT && tar czf t4.tgz t4 && rm -rf t4
cd - >/dev/null
bash results/2026-12-02-h200-drain-cqe/run3.sh
