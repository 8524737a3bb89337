#!/bin/bash
# Call 8: gic suite --quick with --engine-batch 64 and 96 on w2tail (the
# commit's engine): every row of the suite through the wide kernels.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c8; mkdir -p $O /tmp/gt && tar xJf devbin19/w2tail.txz -C /tmp/gt
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for b in 64 96; do
	timeout -s KILL 280 /tmp/gt/b/bench/gic/gic suite --quick --engine-batch $b --json $O/qsuite-$b.json > $O/qsuite-$b.log 2>&1
	echo "suite b$b rc $?: rows $(grep -o '"validated": [a-z]*' $O/qsuite-$b.json | wc -l), invalid $(grep -o '"validated": false' $O/qsuite-$b.json | wc -l), engine_batch=$b in $(grep -c "engine_batch=$b" $O/qsuite-$b.json)"
done
grep -hE 'wrong|later|did not|FAIL' $O/*.log | head -5
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c8.tgz c8 && rm -rf c8
