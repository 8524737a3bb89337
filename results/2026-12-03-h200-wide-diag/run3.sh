#!/bin/bash
# Call 3: the wide kernel's latency cost, four builds of the engine side by
# side (base: the wide batch inlined, 224-register cap; noinl: wide_batch a
# __noinline__ call on copies of the pass, the BBs and the QP; r255 and
# r255ni: the same with a 255-register cap); then every gic rate row with
# --engine-batch 64 on base (payloads checked).
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c3; mkdir -p $O /tmp/g /tmp/v3 && tar xJf devbin16/c2.txz -C /tmp/g && tar xJf devbin16/c3.txz -C /tmp/v3
bin() { [ $1 = base ] && echo /tmp/g/b/bench/gic/gic || echo /tmp/v3/v/gic-$1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for k in 1 2; do for v in base:32 base:64 noinl:64 r255:64 r255ni:64; do
	n=${v%:*}; b=${v#*:}
	timeout -s KILL 40 $(bin $n) lat --engine-batch $b --path gda-inline > $O/lat-$n-$b-$k.log 2>&1
	echo "lat $n b$b: $(grep -E 'put\+completion|rtt' $O/lat-$n-$b-$k.log | head -2 | awk '{printf "%s %s %s | ", $3, $4, $5}')"
done; done
for v in base:32 base:64 noinl:64 r255:64 r255ni:64; do
	n=${v%:*}; b=${v#*:}
	timeout -s KILL 90 $(bin $n) rate --engine-batch $b --row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16 > $O/rate-$n-$b.log 2>&1
	echo "rate $n b$b rc $?: $(grep 'with drain' $O/rate-$n-$b.log | awk '{printf "%s %s %s | ", $1, $6, $NF}')"
done
timeout -s KILL 250 $(bin base) rate --engine-batch 64 --row all --json $O/all-64.json > $O/all-64.log 2>&1
echo "all b64 rc $?: $(grep -c ' yes ' $O/all-64.log) yes, $(grep -c ' NO ' $O/all-64.log) NO"
grep -E 'wrong|later|did not' $O/*.log | head -5
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
