#!/bin/bash
# Call 12: main after gpu_pair_finish: lat, rate and payload --procs 2 in
# GPU mode once each under MPS (the final binaries of the session).
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null
mkdir -p /tmp/b && tar xJf devbin5/h.txz -C /tmp/b
O=$OUT/t12; mkdir -p $O; G=/tmp/b/v7/gic
nvidia-smi --query-gpu=name,driver_version,clocks.sm,compute_mode --format=csv,noheader
run() { local n=$1 lim=$2; shift 2; timeout -s KILL $lim "$@" > $O/$n.log 2>&1; local rc=$?; pkill -9 -f '/gic ' 2>/dev/null; echo "$n rc $rc"; }
export CUDA_MPS_PIPE_DIRECTORY=/tmp/gic-mps CUDA_MPS_LOG_DIRECTORY=/tmp/gic-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started"
run lat 90 $G lat --procs 2 --path gda-inline --order fence-gpu -n 2000 --json $O/lat.json
grep -E "put\+completion|rtt|rror|PE" $O/lat.log | head -4 | cut -c1-120
run rate 120 $G rate --procs 2 --row t32-q1-warp --row t64-q64-s64-b16 --json $O/rate.json
grep -E "message rate|rror|PE" $O/rate.log | head -6 | cut -c1-120
run payload 120 $G payload --procs 2 --path gda -b 4096 -e 1048576 -f 16 --json $O/payload.json
grep -E "goodput|first|rror|PE" $O/payload.log | head -5 | cut -c1-120
echo quit | nvidia-cuda-mps-control
for _ in $(seq 1 20); do pgrep -f nvidia-cuda-mps >/dev/null || break; sleep 0.5; done
pgrep -f nvidia-cuda-mps >/dev/null && echo "MPS still running" || echo "MPS stopped"
ls /dev/shm | grep -c gic-gpu-peer
cd $OUT && tar czf t12.tgz t12 && rm -rf t12
