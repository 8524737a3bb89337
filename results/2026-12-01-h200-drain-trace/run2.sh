#!/bin/bash
# Device call 2: the batch timeline with five more stamps (a temporary
# engine build, not committed: 10 all lanes' BBs in, 11 decoded and
# resolved, 12 CQE filled before its fence, 13 trace flushed, 14 QP record
# re-read), and the primitive costs (the plain pipeline run).
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'bench/gic/gic|gic-gpu-|pipe-tr' 2>/dev/null
mkdir -p devbin3/x && tar xJf devbin3/a.txz -C devbin3/x && tar xJf devbin3/b.txz -C devbin3/x
export CUDA_MODULE_LOADING=EAGER
B=devbin3/x/s
O=$OUT/t2; mkdir -p $O
run() { local n=$1 lim=$2; shift 2; timeout -k 2 $lim "$@" > $O/$n.log 2>&1; echo "$n rc $?"; }
run tr500 60 $B/pipe-tr --batch 500; grep -E "drained|timeline|->" $O/tr500.log | cut -c1-110
run prims 60 $B/gic-gpu-pipeline -n 600; sed -n '/primitive/,$p' $O/prims.log | cut -c1-110
pkill -9 -f 'bench/gic/gic|gic-gpu-|pipe-tr' 2>/dev/null
cd $OUT && tar czf t2.tgz t2 && rm -rf t2
