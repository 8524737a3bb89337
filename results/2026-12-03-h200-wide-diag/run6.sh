#!/bin/bash
# Call 6: the row's bound with the wide batch. gic rate's one-QP rows with the
# engine sharing the posters' SMs and on 16 SMs of its own (--engine-sms 16),
# for 32, 64 and three per lane (w3: variants.patch, 255-register cap); the
# merged build (HEAD) for the first two, and its quick rate and lat as a check.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c6; mkdir -p $O /tmp/g6 && tar xJf devbin16/c6.txz -C /tmp/g6
G=/tmp/g6/b/bench/gic/gic
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for k in 1 2; do for v in $G:32 $G:64 /tmp/g6/b/gic-w3:64; do for s in 0 16; do
	n=${v%:*}; b=${v#*:}; e=; [ $s = 16 ] && e="--engine-sms 16"
	timeout -s KILL 90 $n rate --engine-batch $b $e --row t32-q1-warp --row t256-q1-warp > $O/rate-$(basename $n)-$b-$s-$k.log 2>&1
	echo "$(basename $n) b$b sms$s rc $?: $(grep -E '^t(32|256)-q1-warp ' $O/rate-$(basename $n)-$b-$s-$k.log | awk '{printf "%s %s %s | ", $1, $(NF-8), $(NF-1)}')"
done; done; done
timeout -s KILL 120 $G rate --quick --engine-batch 64 > $O/quick64.log 2>&1; echo "quick64 rc $? $(grep -c ' yes' $O/quick64.log) yes $(grep -c ' NO' $O/quick64.log) NO"
timeout -s KILL 120 $G lat --quick > $O/latq.log 2>&1; echo "latq rc $? $(grep -c ' yes' $O/latq.log) yes $(grep -c ' NO' $O/latq.log) NO"
grep -E 'wrong|later|did not' $O/*.log | head -5
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c6.tgz c6 && rm -rf c6
