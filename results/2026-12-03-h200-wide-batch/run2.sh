#!/bin/bash
# Call 2: the wide batch with the cross-set proof and 12-byte payloads (w2a), at 240 registers (w2b), against the committed engine at 224 (base) and 240 (b240)
# rate and lat rows alternated; the engine checks on w2a.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t2; mkdir -p $O
for v in base b240 w2a w2b; do mkdir -p /tmp/$v && tar xJf devbin15/$v.txz -C /tmp/$v; done
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for k in 1 2; do
	for v in base b240 w2a w2b; do
		timeout -s KILL 90 /tmp/$v/b/bench/gic/gic rate --row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16 > $O/rate-$v-$k.log 2>&1
		grep "with drain" $O/rate-$v-$k.log | awk -v v=$v '{print "  " v, $1, $3, $4, $5, $6, $7, $8}'
		timeout -s KILL 60 /tmp/$v/b/bench/gic/gic lat --path gda-inline > $O/lat-$v-$k.log 2>&1
		grep -E 'put\+completion|rtt' $O/lat-$v-$k.log | head -2 | cut -c1-90 | sed "s/^/  $v /"
	done
done
B=/tmp/w2a/b
for t in engine-check conformance fidelity; do
	timeout -s KILL 120 $B/gic-gpu-$t > $O/$t.log 2>&1; echo "$t rc $? $(grep -E 'passed' $O/$t.log | tail -1)"
done
timeout -s KILL 120 $B/gic-gpu-pipeline --batch 64 > $O/pipeline.log 2>&1; echo "pipeline rc $?"; grep -iE 'rate|batches' $O/pipeline.log | head -4 | cut -c1-160
grep -E 'FAIL|:[0-9]+: ' $O/*.log | head -10
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf t2.tgz t2 && rm -rf t2
