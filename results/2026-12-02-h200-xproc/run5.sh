#!/bin/bash
# Call 5: main after the helper's bench/ cuts (pe_gpu.cuh, sink.c, gpu_stubs.c,
# conns' check): gic suite --quick with every GPU row (compared with the tenth
# session's call 10), then NVSHMEM's IBRC lat rows on the emulated device
# under MPS (nvshmem_pe.cu and pe_gpu.cuh run), as scripts/nvshmem-compare.sh.
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'bench/gic/gic|gic-gpu-' 2>/dev/null
R=$PWD; mkdir -p /tmp/nv && tar xJf devbin4/nv.txz -C /tmp/nv && cd /tmp/nv
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t5; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,compute_mode --format=csv,noheader
timeout -k 2 300 ./bench/gic/gic suite --quick --json $O/suite.json > $O/suite.log 2>&1; echo "suite rc $?"
grep -ciE "invalid|FAIL" $O/suite.log
export CUDA_MPS_PIPE_DIRECTORY=/tmp/gic-mps CUDA_MPS_LOG_DIRECTORY=/tmp/gic-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started"
( export LD_LIBRARY_PATH=/tmp/nv/nvlib NVSHMEM_DISABLE_P2P=1 NVSHMEM_DISABLE_GDRCOPY=1 \
    GIC_NVSHMEM_LIMIT_S=100 NVSHMEM_REMOTE_TRANSPORT=ibrc
  timeout -k 2 130 ./gic-emu --sysfs ./bench/gic/gic lat --quick --path nvshmem \
    --json $O/ibrc-lat.json > $O/ibrc-lat.log 2>&1; echo "ibrc lat rc $?" )
grep -E 'nvshmem' $O/ibrc-lat.log | head -8
echo quit | nvidia-cuda-mps-control
for _ in $(seq 1 20); do pgrep -f nvidia-cuda-mps >/dev/null || break; sleep 0.5; done
pgrep -f nvidia-cuda-mps >/dev/null && echo "MPS still running" || echo "MPS stopped"
pkill -9 -f 'bench/gic/gic|gic-gpu-' 2>/dev/null
cd $OUT && tar cJf t5.txz t5 && rm -rf t5
