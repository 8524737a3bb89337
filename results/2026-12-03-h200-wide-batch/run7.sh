#!/bin/bash
# Call 7: the poster's quiet. prof/drain_alone.cu alone / conc (quiet: one CQE
# tail per trip) / conc-wide (8 tails per trip, gic_sq_quiet_wide), committed vs
# w2a engine; then gic rate's rows with the committed quiet (fin), the wide quiet
# in the rate kernels (qw), and the wide quiet with the w2a engine (qw_w2a).
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t7; mkdir -p $O
tar xJf devbin15/alone.txz -C /tmp
for v in fin qw qw_w2a; do mkdir -p /tmp/$v && tar xJf devbin15/$v.txz -C /tmp/$v; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for m in alone conc conc-wide; do for v in base w2a; do
	a=$m; [ $m = alone ] && a=
	timeout -s KILL 60 /tmp/dp/alone_$v 6 64 $a > $O/$m-$v.log 2>&1
	echo "$m $v rc $? $(grep round $O/$m-$v.log | tail -3 | sed 's/.*(\([0-9.]*\) M msg.*stalls \([0-9]*\) doorbell_watches \([0-9]*\)/\1/' | tr '\n' ' ')"
done; done
for k in 1 2; do for v in fin qw qw_w2a; do
	timeout -s KILL 90 /tmp/$v/b/bench/gic/gic rate --row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16 > $O/rate-$v-$k.log 2>&1
	grep "with drain" $O/rate-$v-$k.log | awk -v v=$v '{print "  " v, $1, $6, $7}'
done; done
grep -h 'bad payloads [1-9]\|err [1-9]' $O/*.log | head -3
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf t7.tgz t7 && rm -rf t7
