#!/bin/bash
# Device run 14 (eighth session): the engine after its decoders share their
# field fill (lane_fill_common) and its fences moved
# into port.h (gic_fence_release_gpu, gic_fence_acq_rel_sys: the same PTX):
# scripts/pipeline-check.sh (the pipeline, gic lat, the engine's programs).
cd "$(dirname "$0")" && mkdir -p x && tar xJf devbin.txz -C x && cd ..
export CUDA_MODULE_LOADING=EAGER
OUT=$OUT/pipe GIC_GPU_BIN=$PWD/devbin/x/b ITERS=1000 timeout 420 bash scripts/pipeline-check.sh 2>&1 | sed -n '2,4p;/gic lat\|PASS\|FAIL\|pipeline-check/p'
