#!/bin/bash
# Call 4: three and four WQEs per lane (w3, w4: 255-register cap, 16 and 32
# bytes of spill; w3c: three at the 224 cap, 168 bytes of spill) beside two
# (base at 224, r255 at 255) and the default kernel (base b32).
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c4; mkdir -p $O /tmp/g /tmp/v4 && tar xJf devbin16/c2.txz -C /tmp/g && tar xJf devbin16/c4.txz -C /tmp/v4
bin() { [ $1 = base ] && echo /tmp/g/b/bench/gic/gic || echo /tmp/v4/v/gic-$1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
V="base:32 base:64 r255:64 w3:64 w3c:64 w4:64"
for k in 1 2; do for v in $V; do
	n=${v%:*}; b=${v#*:}
	timeout -s KILL 90 $(bin $n) rate --engine-batch $b --row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16 --row t16-q16-s16-b16 > $O/rate-$n-$b-$k.log 2>&1
	echo "rate $n b$b rc $?: $(grep 'with drain' $O/rate-$n-$b-$k.log | awk '{printf "%s %s %s | ", $1, $6, $NF}')"
done; done
for k in 1 2; do for v in $V; do
	n=${v%:*}; b=${v#*:}
	timeout -s KILL 40 $(bin $n) lat --engine-batch $b --path gda-inline > $O/lat-$n-$b-$k.log 2>&1
	echo "lat $n b$b: $(grep -E 'put\+completion|rtt' $O/lat-$n-$b-$k.log | head -2 | awk '{printf "%s %s %s | ", $3, $4, $5}')"
done; done
grep -E 'wrong|later|did not' $O/*.log | head -5
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
