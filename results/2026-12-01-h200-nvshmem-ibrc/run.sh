#!/bin/bash
# Device run 3: mini-gda on softnic's GPU engine (reference rows), then
# NVSHMEM IBRC on the emulated device: without MPS (lat) and with MPS
# (lat, rate, payload). Full logs under $OUT/logs.
cd "$(dirname "$0")"
tar xzf devbin.tgz
B=$PWD/b; NV=$PWD/nv
mkdir -p $OUT/logs
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version,compute_mode --format=csv,noheader | tee $OUT/logs/gpu.txt
step() { local name=$1; shift; local t0=$(date +%s%N); timeout ${T:-150} "$@" > $OUT/logs/$name.log 2>&1; local rc=$?; local ms=$(( ($(date +%s%N) - t0) / 1000000 )); printf '%-16s rc=%-3s %6sms  %s\n' "$name" "$rc" "$ms" "$(tail -1 $OUT/logs/$name.log | cut -c1-120)"; }
step gda_lat $B/bench/gic/gic lat --quick --path gda-inline --json $OUT/gda_lat.json
export LD_LIBRARY_PATH=$NV
export NVSHMEM_REMOTE_TRANSPORT=ibrc NVSHMEM_DISABLE_P2P=1 NVSHMEM_DISABLE_GDRCOPY=1 GIC_NVSHMEM_LIMIT_S=120
NVSHMEM_DEBUG=INFO NVSHMEM_DEBUG_SUBSYS=INIT,TRANSPORT step ibrc_nomps $B/gic-emu --sysfs $B/bench/gic/gic lat --quick --path nvshmem --json $OUT/ibrc_nomps.json
grep -c 'not implemented' $OUT/logs/ibrc_nomps.log; grep 'not implemented\|gic-emu:' $OUT/logs/ibrc_nomps.log | sort | uniq -c | head
which nvidia-cuda-mps-control || echo "no MPS control"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/gic-mps CUDA_MPS_LOG_DIRECTORY=/tmp/gic-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started"
step ibrc_lat $B/gic-emu --sysfs $B/bench/gic/gic lat --path nvshmem --json $OUT/ibrc_lat.json
step ibrc_rate $B/gic-emu --sysfs $B/bench/gic/gic rate --quick --row nvshmem --json $OUT/ibrc_rate.json
step ibrc_payload $B/gic-emu --sysfs $B/bench/gic/gic payload --quick --path nvshmem --json $OUT/ibrc_payload.json
echo quit | nvidia-cuda-mps-control; sleep 1; pgrep -l nvidia-cuda-mps || echo "MPS stopped"
cp $CUDA_MPS_LOG_DIRECTORY/control.log $OUT/logs/mps_control.log 2>/dev/null
for f in gda_lat ibrc_nomps ibrc_lat ibrc_rate ibrc_payload; do echo "== $f"; grep -E '^(name|nvshmem|gda|mini|proxy)|valid|us |M msg' $OUT/logs/$f.log | grep -v INFO | head -14; done
