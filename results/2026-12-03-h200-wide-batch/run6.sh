#!/bin/bash
# Call 6: is the rate row's second bound the poster sharing the engine warp's SM?
# gic rate's one-QP rows with the engine on 16 SMs of its own (--engine-sms 16,
# a green context: the posters run on the other SMs), committed vs w2a.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t6; mkdir -p $O
for v in base w2a; do mkdir -p /tmp/$v && tar xJf devbin15/$v.txz -C /tmp/$v; done
for v in base w2a; do for s in 0 16; do
	a=; [ $s -gt 0 ] && a="--engine-sms $s"
	timeout -s KILL 90 /tmp/$v/b/bench/gic/gic rate --row t32-q1-warp --row t256-q1-warp $a > $O/rate-$v-sms$s.log 2>&1
	grep "with drain" $O/rate-$v-sms$s.log | awk -v v="$v sms=$s" '{print "  " v, $1, $6, $7}'
done; done
cd $OUT && tar czf t6.tgz t6 && rm -rf t6
