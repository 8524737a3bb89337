#!/bin/bash
# Device call 6: the drain with the engine's start out of the clock (round 0
# completes first), old engine (o: bb7e32e) against new (n: the overlap
# proof and the signaled-lane CQE rounds), alternated, rings 2^14 and 2^10.
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'bench/gic/gic|gic-gpu-|pipe' 2>/dev/null
mkdir -p devbin3/x && tar xJf devbin3/f.txz -C devbin3/x
export CUDA_MODULE_LOADING=EAGER
X=devbin3/x/m
O=$OUT/t6; mkdir -p $O
run() { local n=$1 lim=$2; shift 2; timeout -k 2 $lim "$@" > $O/$n.log 2>&1; echo "$n rc $?"; }
for r in 1 2; do for L in 14 10; do for v in o n; do
run $v$L-$r 40 $X/pipe-$v --batch 500 --ring $L; grep -E "drained|poster" $O/$v$L-$r.log | sed "s/^/  $v: /" | cut -c1-150
done; done; done
pkill -9 -f 'bench/gic/gic|gic-gpu-|pipe' 2>/dev/null
cd $OUT && tar czf t6.tgz t6 && rm -rf t6
