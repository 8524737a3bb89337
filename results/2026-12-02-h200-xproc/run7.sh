#!/bin/bash
# Call 7: the spread of the cross-process row (call 6 read 5.06 us p50): four
# runs of gic-gpu-xproc -n 10000 alternated with the one-process gic lat row,
# all under one MPS daemon.
cd "$(dirname "$0")/../.."
pkill -9 -f 'gic-gpu-|bench/gic/gic' ; mkdir -p /tmp/b && cd /tmp/b && tar xJf ~-/devbin4/n.txz
L=$OUT/logs; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version,clocks.sm,compute_mode --format=csv,noheader
t() { local name=$1; shift; timeout -s KILL 60 "$@" > $L/$name.log 2>&1; local rc=$?; pkill -9 -f "gic-gpu-xproc"; echo "$name rc=$rc"; }
export CUDA_MPS_PIPE_DIRECTORY=/tmp/gic-mps CUDA_MPS_LOG_DIRECTORY=/tmp/gic-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started"
for k in 1 2 3 4; do
  t xproc-lat$k ./gic-gpu-xproc -n 10000; grep -E 'p50' $L/xproc-lat$k.log
  t lat$k ./gic lat --path gda-inline --order fence-gpu --metric putc --metric rtt -n 2000; grep -E 'completion  |rtt  ' $L/lat$k.log | head -2
done
echo quit | nvidia-cuda-mps-control
for _ in $(seq 1 20); do pgrep -f nvidia-cuda-mps >/dev/null || break; sleep 0.5; done
pgrep -f nvidia-cuda-mps >/dev/null && echo "MPS still running" || echo "MPS stopped"
cd $OUT && tar cJf logs.txz logs && rm -rf logs
