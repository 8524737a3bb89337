#!/bin/bash
# Call 4: the pass's extension (build ext: new + pass_extend, a drained
# pass reads the record again at its end) and three WQEs per lane (build
# w3: new + ../2026-12-03-h200-wide-diag/variants.patch built with
# -DSNX_GPU_BATCH_WIDE_MAX=3 -DSNX_WIDE_TRY=3 -DSNX_GPU_NREG=255, its
# kernel behind --engine-batch 64) against new (62d299a): the GPU test
# runner on ext; drain_watch and gic rate side by side, gic lat new/ext.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c4; mkdir -p $O /tmp/gn /tmp/ge /tmp/g3
tar xJf devbin19/new.txz -C /tmp/gn && tar xJf devbin19/ext.txz -C /tmp/ge && tar xJf devbin19/w3.txz -C /tmp/g3
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
t0=$(date +%s)
GIC_GPU_BIN=/tmp/ge/b OUT=$O/gpu timeout -s KILL 300 bash scripts/gpu-test.sh 2>&1 | grep -E '^(FAIL|SKIP)|passed' | tail -6
echo "gpu-test $(( $(date +%s) - t0 )) s"
pkill -9 -f gic-gpu 2>/dev/null
w() { # label binary mode
	env DRAIN_BATCH=64 timeout -s KILL 60 $2 4 1 $3 > $O/w-$1.log 2>&1
	echo "$1 rc $? clean $(grep -c 'bad payloads 0' $O/w-$1.log): $(grep ' round [123]' $O/w-$1.log | grep -o '([0-9.]* M msg/s' | tr '\n' ' ')"
	grep 'engine:' $O/w-$1.log | tail -1 | sed -E 's/^ *engine: //'
}
for m in conc-warp alone-ringpace alone; do
	w new-$m /tmp/gn/b/drain_watch $m
	w ext-$m /tmp/ge/b/drain_watch_ext $m
	w w3-$m /tmp/g3/b/drain_watch_w3 $m
done
rows="--row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16"
for k in 1 2; do for n in new ext w3; do
	B=/tmp/g$(echo $n | cut -c1)/b; [ $n = w3 ] && B=/tmp/g3/b
	for b in 64 32; do
	[ $n = w3 ] && [ $b = 32 ] && continue
	timeout -s KILL 90 $B/bench/gic/gic rate --engine-batch $b $rows > $O/rate-$n-$b-$k.log 2>&1
	echo "$n b$b rc $?: $(grep 'with drain' $O/rate-$n-$b-$k.log | awk '{printf "%s %s %s | ", $1, $(NF-8), $(NF-1)}')"
	done
	[ $n = w3 ] && continue
	timeout -s KILL 40 $B/bench/gic/gic lat --path gda-inline > $O/lat-$n-$k.log 2>&1
	echo "  $n lat rc $?: $(grep -E 'put\+completion|rtt' $O/lat-$n-$k.log | head -2 | awk '{printf "%s %s %s %s | ", $3, $4, $5, $6}')"
done; done
grep -hE 'wrong|later|did not' $O/*.log | head -5
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c4.tgz c4 && rm -rf c4
