#!/bin/bash
# Device call (ninth session): softnic's GPU engine on SMs of its own
# (--engine-sms, CUDA green contexts) against the engine sharing the SMs:
# scripts/green-check.sh (gic kernel and gic lat, three placements), then
# the lock / hand-off / warp rows of gic rate shared and on 16 engine SMs.
# devbin2/new.txz: this commit's build-dev (sm_90) gic.
cd "$(dirname "$0")/../.." || exit 1
mkdir -p devbin2/x && tar xJf devbin2/new.txz -C devbin2/x
export CUDA_MODULE_LOADING=EAGER
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
mkdir -p $OUT/logs
GIC_GPU_BIN=devbin2/x/n OUT=$OUT/logs/green timeout 420 bash scripts/green-check.sh 2>&1 | tail -40
g=devbin2/x/n/bench/gic/gic
for p in "" "--engine-sms 16"; do
	timeout 90 $g rate --row t32-q1-lock --row t256-q1-handoff --row t32-q1-warp --row t64-q64-s64-b16 $p \
		--json $OUT/logs/rate${p:+-g16}.json > $OUT/logs/rate${p:+-g16}.log 2>&1
	echo "rate ${p:-shared}: rc $?"; grep "message rate" $OUT/logs/rate${p:+-g16}.log | cut -c1-110
done
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $OUT/logs
