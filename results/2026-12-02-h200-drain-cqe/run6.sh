#!/bin/bash
# Call 6: main after the helper's library-PE bodies (pe_bodies.cuh,
# rate_locked): gic suite --quick with every GPU row, the lock rows, then
# NVSHMEM's IBRC lat and rate rows on the emulated device under MPS
# (nvshmem_pe.cu's changed kernels and host halves run).
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null
mkdir -p /tmp/nv && tar xJf devbin6/nv.txz -C /tmp/nv && cd /tmp/nv
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t6; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,compute_mode --format=csv,noheader
timeout -s KILL 300 ./bench/gic/gic suite --quick --json $O/suite.json > $O/suite.log 2>&1; echo "suite rc $?"
grep -ciE "invalid|FAIL" $O/suite.log; grep -c '"name"' $O/suite.json
timeout -s KILL 60 ./bench/gic/gic rate --row t32-q1-lock --row t32-q1-caslock > $O/lock.log 2>&1; echo "lock rc $?"
grep -E "message rate" $O/lock.log | cut -c1-110
export CUDA_MPS_PIPE_DIRECTORY=/tmp/gic-mps CUDA_MPS_LOG_DIRECTORY=/tmp/gic-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started"
( export LD_LIBRARY_PATH=/tmp/nv/nvlib NVSHMEM_DISABLE_P2P=1 NVSHMEM_DISABLE_GDRCOPY=1 \
    GIC_NVSHMEM_LIMIT_S=100 NVSHMEM_REMOTE_TRANSPORT=ibrc
  timeout -s KILL 130 ./gic-emu --sysfs ./bench/gic/gic lat --quick --path nvshmem \
    --json $O/ibrc-lat.json > $O/ibrc-lat.log 2>&1; echo "ibrc lat rc $?"
  grep -E 'nvshmem' $O/ibrc-lat.log | head -8 | cut -c1-130
  timeout -s KILL 130 ./gic-emu --sysfs ./bench/gic/gic rate --quick --row nvshmem-t1 --row nvshmem-t32 \
    --json $O/ibrc-rate.json > $O/ibrc-rate.log 2>&1; echo "ibrc rate rc $?"
  grep -E 'nvshmem|rror' $O/ibrc-rate.log | head -6 | cut -c1-130 )
echo quit | nvidia-cuda-mps-control
for _ in $(seq 1 20); do pgrep -f nvidia-cuda-mps >/dev/null || break; sleep 0.5; done
pgrep -f nvidia-cuda-mps >/dev/null && echo "MPS still running" || echo "MPS stopped"
pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null
cd $OUT && tar czf t6.tgz t6 && rm -rf t6
