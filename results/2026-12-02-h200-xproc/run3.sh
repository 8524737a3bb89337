#!/bin/bash
# Call 3: gic-gpu-xproc --check with PE 1 exiting abruptly and after its close,
# with and without MPS; the cross-process rows at n 10000 beside gic lat.
cd "$(dirname "$0")/../.."
pkill -9 -f 'bench/gic/gic|gic-gpu-' ; mkdir -p /tmp/b && cd /tmp/b && tar xJf ~-/devbin4/n.txz
L=$OUT/logs; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version,clocks.sm,compute_mode --format=csv,noheader
t() { local name=$1; shift; timeout -s KILL ${T:-120} "$@" > $L/$name.log 2>&1; local rc=$?; pkill -9 -f "gic-gpu-xproc"; echo "$name rc=$rc"; }
T=60 t nomps-closed ./gic-gpu-xproc --check --peer-exit closed; tail -3 $L/nomps-closed.log
export CUDA_MPS_PIPE_DIRECTORY=/tmp/gic-mps CUDA_MPS_LOG_DIRECTORY=/tmp/gic-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started"
t mps-closed ./gic-gpu-xproc --check --peer-exit closed; tail -3 $L/mps-closed.log
t mps-abrupt ./gic-gpu-xproc --check; tail -3 $L/mps-abrupt.log
for k in 1 2; do
  t xproc-lat$k ./gic-gpu-xproc -n 10000; grep -E 'p50|payload' $L/xproc-lat$k.log
  t lat$k ./gic lat --path gda-inline --order fence-gpu --metric putc --metric rtt -n 5000; grep -E 'completion  |rtt  ' $L/lat$k.log | head -2
done
ls /dev/shm | grep -c gic-gpu-peer
echo quit | nvidia-cuda-mps-control
for _ in $(seq 1 20); do pgrep -f nvidia-cuda-mps >/dev/null || break; sleep 0.5; done
pgrep -f nvidia-cuda-mps >/dev/null && echo "MPS still running" || echo "MPS stopped"
cd $OUT && tar cJf logs.txz logs && rm -rf logs
