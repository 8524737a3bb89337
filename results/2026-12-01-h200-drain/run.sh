#!/bin/bash
# Device call (ninth session): the GPU engine's drain loop with fewer trips
# per batch (scripts/drain-check.sh; o = a25aa81's build-dev sm_90 binaries,
# n = the same tree with the drain change), then the round-robin rows
# (views in shared memory) of o against 4f6b5c1's gic (devbin/devbin.txz).
cd "$(dirname "$0")/../.." || exit 1
mkdir -p devbin2/x && tar xJf devbin2/new.txz -C devbin2/x && tar xJf devbin/devbin.txz -C devbin2/x
export CUDA_MODULE_LOADING=EAGER
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
GIC_GPU_BIN=devbin2/x/n GIC_GPU_BIN_OLD=devbin2/x/o OUT=$OUT/drain ROUNDS=2 timeout 400 \
	bash scripts/drain-check.sh 2>&1 | tail -50 | cut -c1-150
mkdir -p $OUT/rr
rows="--row t1-q1-b1 --row t1-q2-rr --row t1-q8-rr --row t1-q32-rr --row t1-q8-rr-wrap"
for v in b o; do
	timeout 100 devbin2/x/$v/bench/gic/gic rate $rows --json $OUT/rr/$v.json > $OUT/rr/$v.log 2>&1
	echo "rr $v rc $?"; grep "message rate" $OUT/rr/$v.log | awk '{print "  " $1, $2, $3, $4, $5, $6}'
done
cd $OUT && tar czf rr.tgz rr && rm -rf rr && find drain -type f ! -name '*.tgz' -delete
