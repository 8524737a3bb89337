#!/bin/bash
# Device call (ninth session): the round-robin rows (one thread over 2..32
# QPs, paper 1.85 M msg/s, beside one QP's 1.79) with the thread's views in
# the CTA's shared memory (o: a25aa81's build-dev sm_90 gic, in
# devbin2/new.txz) against the views in global memory (b: 4f6b5c1's gic,
# devbin/devbin.txz), alternated. First stops any gic left running by an
# earlier call on the same machine (it had halved every rate).
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'bench/gic/gic|gic-gpu-' 2>/dev/null; sleep 1
nvidia-smi --query-compute-apps=pid,name --format=csv,noheader | head -3
mkdir -p devbin2/x && tar xJf devbin2/new.txz -C devbin2/x && tar xJf devbin/devbin.txz -C devbin2/x
export CUDA_MODULE_LOADING=EAGER
mkdir -p $OUT/rr
rows="--row t1-q1-b1 --row t1-q2-rr --row t1-q8-rr --row t1-q32-rr --row t1-q8-rr-wrap"
for k in 1 2; do for v in b o; do
	timeout 60 devbin2/x/$v/bench/gic/gic rate $rows --json $OUT/rr/$v-$k.json > $OUT/rr/$v-$k.log 2>&1
	echo "rr $v-$k rc $?"; grep "message rate" $OUT/rr/$v-$k.log | awk '{print "  " $1, $2, $3, $4, $5, $6}'
done; done
cd $OUT && tar czf rr.tgz rr && rm -rf rr
