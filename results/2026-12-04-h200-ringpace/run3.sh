#!/bin/bash
# Call 3: the engine's counters in device memory and the warp's quiet
# (build new) against 70a30e1 (base): the GPU test runner on new;
# drain_watch on the base engine with and without the host's counter reads
# (DRAIN_NO_STATS), and on new with the lane-0 and the warp quiet; gic rate's
# one-QP rows and 64 QPs side by side, twice.
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c3; mkdir -p $O /tmp/gb /tmp/gn && tar xJf devbin19/base.txz -C /tmp/gb && tar xJf devbin19/new.txz -C /tmp/gn
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
t0=$(date +%s)
GIC_GPU_BIN=/tmp/gn/b OUT=$O/gpu timeout -s KILL 300 bash scripts/gpu-test.sh 2>&1 | grep -E '^(FAIL|SKIP)|passed' | tail -6
grep -h 'quiet_warp' $O/gpu/suite.log | head -2
echo "gpu-test $(( $(date +%s) - t0 )) s"
pkill -9 -f gic-gpu 2>/dev/null
w() { # label binary mode [env...]
	local l=$1 b=$2 m=$3; shift 3
	env "$@" DRAIN_BATCH=64 timeout -s KILL 60 $b 4 1 $m > $O/w-$l.log 2>&1
	echo "$l rc $? clean $(grep -c 'bad payloads 0' $O/w-$l.log): $(grep ' round ' $O/w-$l.log | grep -o '[0-9.]* M msg/s' | tail -3 | tr '\n' ' ')"
	grep 'engine:' $O/w-$l.log | tail -2 | sed -E 's/^ *engine: //'
}
w old-conc-wide /tmp/gb/b/drain_watch_old conc-wide
w old-conc-wide-nostats /tmp/gb/b/drain_watch_old conc-wide DRAIN_NO_STATS=1
w old-ringpace-nostats /tmp/gb/b/drain_watch_old alone-ringpace DRAIN_NO_STATS=1
w new-conc-wide /tmp/gn/b/drain_watch conc-wide
w new-conc-warp /tmp/gn/b/drain_watch conc-warp
w new-ringpace /tmp/gn/b/drain_watch alone-ringpace
w new-alone /tmp/gn/b/drain_watch alone
rows="--row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16"
for k in 1 2; do for n in base new; do
	B=/tmp/gb/b; [ $n = new ] && B=/tmp/gn/b
	for b in 64 32; do
	timeout -s KILL 90 $B/bench/gic/gic rate --engine-batch $b $rows > $O/rate-$n-$b-$k.log 2>&1
	echo "$n b$b rc $?: $(grep 'with drain' $O/rate-$n-$b-$k.log | awk '{printf "%s %s %s | ", $1, $(NF-8), $(NF-1)}')"
	done
done; done
grep -hE 'wrong|later|did not' $O/*.log | head -5
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c3.tgz c3 && rm -rf c3
