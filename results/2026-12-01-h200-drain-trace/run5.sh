#!/bin/bash
# Device call 5: where the poster's span goes (posting, quiet) beside the engine's first record and last CQE.
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'bench/gic/gic|gic-gpu-|pipe' 2>/dev/null
mkdir -p devbin3/x && tar xJf devbin3/e.txz -C devbin3/x
export CUDA_MODULE_LOADING=EAGER
X=devbin3/x/m
O=$OUT/t5; mkdir -p $O
run() { local n=$1 lim=$2; shift 2; timeout -k 2 $lim "$@" > $O/$n.log 2>&1; echo "$n rc $?"; }
for L in 14 10; do
run pipe$L 40 $X/pipe --batch 500 --ring $L; grep -E "drained|timeline|poster" $O/pipe$L.log | cut -c1-150
done
pkill -9 -f 'bench/gic/gic|gic-gpu-|pipe' 2>/dev/null
cd $OUT && tar czf t5.tgz t5 && rm -rf t5
