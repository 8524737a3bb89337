#!/bin/bash
# Device call (ninth session): the lock and hand-off rows after the hand-off
# reconverges its lanes and the ticket lock builds before its turn.
# devbin2/new.txz: this commit's build-dev (sm_90) gic, gic-gpu-conformance,
# gic-gpu-suite; devbin/devbin.txz: the previous commit's (4f6b5c1's tree).
cd "$(dirname "$0")/../.." || exit 1
mkdir -p devbin2/x && tar xJf devbin2/new.txz -C devbin2/x && tar xJf devbin/devbin.txz -C devbin2/x
export CUDA_MODULE_LOADING=EAGER
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
rows="t32-q1-lock t32-q1-caslock t256-q1-handoff t32-q1-lock-wrap t256-q1-handoff-wrap t32-q1-warp t1-q1-b1"
for k in 1 2; do for v in old new; do
	b=devbin2/x/n; [ $v = old ] && b=devbin2/x/b
	GIC_GPU_BIN=$b OUT=$OUT/$v-$k ROWS="$rows" timeout 280 bash scripts/t5-check.sh 2>&1 | sed "s/^/$v-$k: /" | grep -v "^$v-$k: GPU"
done; done
timeout 250 devbin2/x/n/gic-gpu-suite > $OUT/gpu-suite.log 2>&1; echo "gic-gpu-suite (new) rc $?"; tail -2 $OUT/gpu-suite.log
