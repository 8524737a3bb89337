#!/bin/bash
# Call 2: as call 1, after the SEND check moved, the host files (peers never read a
# closing or dead peer's GPU memory) and the per-pass translation cache.
# n = this session's build, r = the previous session's (HEAD bb55e28's engine).
cd "$(dirname "$0")/../.."
pkill -9 -f 'bench/gic/gic|gic-gpu-' ; mkdir -p /tmp/b && cd /tmp/b
tar xJf ~-/devbin4/n.txz && mkdir -p r && tar xJf ~-/devbin3/r.txz -C r --strip-components=1
L=$OUT/logs; mkdir -p $L
nvidia-smi --query-gpu=name,driver_version,clocks.sm,compute_mode --format=csv,noheader
t() { local name=$1; shift; timeout -s KILL ${T:-120} "$@" > $L/$name.log 2>&1; local rc=$?; pkill -9 -f "gic-gpu-xproc"; echo "$name rc=$rc"; }
T=60 t xproc-nomps-check ./gic-gpu-xproc --check; tail -14 $L/xproc-nomps-check.log
export CUDA_MPS_PIPE_DIRECTORY=/tmp/gic-mps CUDA_MPS_LOG_DIRECTORY=/tmp/gic-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started"
t xproc-check ./gic-gpu-xproc --check; tail -14 $L/xproc-check.log
for k in 1 2 3; do
  t xproc-lat$k ./gic-gpu-xproc -n 5000; grep -E 'p50|payload' $L/xproc-lat$k.log
  t lat-n$k ./gic lat --path gda-inline --order fence-gpu --metric putc --metric rtt -n 2000; grep -E 'completion|rtt' $L/lat-n$k.log | head -3
done
echo quit | nvidia-cuda-mps-control
for _ in $(seq 1 20); do pgrep -f nvidia-cuda-mps >/dev/null || break; sleep 0.5; done
pgrep -f nvidia-cuda-mps >/dev/null && echo "MPS still running" || echo "MPS stopped"
pkill -9 -f 'gic-gpu-'
for k in 1 2; do
  t lat-r$k r/bench/gic/gic lat --path gda-inline --order fence-gpu --metric putc --metric rtt -n 2000; grep -E 'completion|rtt' $L/lat-r$k.log | head -3
  t lat-m$k ./gic lat --path gda-inline --order fence-gpu --metric putc --metric rtt -n 2000; grep -E 'completion|rtt' $L/lat-m$k.log | head -3
done
t conformance ./gic-gpu-conformance; tail -2 $L/conformance.log
t engine-check ./gic-gpu-engine-check; tail -2 $L/engine-check.log
t fidelity ./gic-gpu-fidelity; tail -2 $L/fidelity.log
t recv ./gic-gpu-recv; tail -2 $L/recv.log
t pipeline-check ./gic-gpu-pipeline --check; tail -2 $L/pipeline-check.log
t rate ./gic rate --row t32-q1-warp --row t64-q64-s64-b16; grep -E 'drain' $L/rate.log | head -4
pkill -9 -f 'bench/gic/gic|gic-gpu-'
