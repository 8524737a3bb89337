#!/bin/bash
# Call 9: gic-gpu-xproc with its new default engines (1 x 1 warp each): --check
# abrupt without MPS, closed under MPS, and the latency rows under MPS.
cd "$(dirname "$0")/../.."
pkill -9 -f 'gic-gpu-' ; mkdir -p /tmp/b && cd /tmp/b && tar xJf ~-/devbin4/n.txz
L=$OUT/logs; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version,clocks.sm,compute_mode --format=csv,noheader
t() { local name=$1; shift; timeout -s KILL 60 "$@" > $L/$name.log 2>&1; local rc=$?; pkill -9 -f "gic-gpu-xproc"; echo "$name rc=$rc"; }
t nomps-abrupt ./gic-gpu-xproc --check --devices 0,0; tail -2 $L/nomps-abrupt.log
export CUDA_MPS_PIPE_DIRECTORY=/tmp/gic-mps CUDA_MPS_LOG_DIRECTORY=/tmp/gic-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started"
t mps-closed ./gic-gpu-xproc --check --peer-exit closed; tail -2 $L/mps-closed.log
t xproc-lat ./gic-gpu-xproc -n 10000; grep -E 'p50|payload' $L/xproc-lat.log
echo quit | nvidia-cuda-mps-control
for _ in $(seq 1 20); do pgrep -f nvidia-cuda-mps >/dev/null || break; sleep 0.5; done
pgrep -f nvidia-cuda-mps >/dev/null && echo "MPS still running" || echo "MPS stopped"
ls /dev/shm | grep -c gic-gpu-peer
cd $OUT && tar cJf logs.txz logs && rm -rf logs
