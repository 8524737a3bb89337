#!/bin/bash
# Device call 10: main after the flag tables and the two-process proxy/conns
# (q), gic suite --quick with every GPU row; its params are compared with
# call 9's suite (the same rows before the flag tables).
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'bench/gic/gic|gic-gpu-' 2>/dev/null
mkdir -p devbin3/x && tar xJf devbin3/q.txz -C devbin3/x
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t10; mkdir -p $O
timeout -k 2 240 devbin3/x/q/bench/gic/gic suite --quick --json $O/qsuite.json > $O/qsuite.log 2>&1; echo "suite rc $?"
grep -ciE "invalid|FAIL" $O/qsuite.log
devbin3/x/q/bench/gic/gic rate --help | head -3
pkill -9 -f 'bench/gic/gic|gic-gpu-' 2>/dev/null
cd $OUT && tar czf t10.tgz t10 && rm -rf t10
