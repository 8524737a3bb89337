#!/bin/bash
# Call 9: gic rate --procs 2 in GPU mode (new: PE 0 posts into PE 1's
# region through GPU peers; PE 1 checks every payload) and gic lat --procs
# 2 on the shared fixture (gpu_pair.cu), under MPS, beside the one-process
# rows; then the quick suite without MPS (the one-process rate refactor).
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null
mkdir -p /tmp/b && tar xJf devbin5/f.txz -C /tmp/b
O=$OUT/t9; mkdir -p $O; G=/tmp/b/v5/gic
nvidia-smi --query-gpu=name,driver_version,clocks.sm,compute_mode --format=csv,noheader
run() { local n=$1 lim=$2; shift 2; timeout -s KILL $lim "$@" > $O/$n.log 2>&1; local rc=$?; pkill -9 -f '/gic ' 2>/dev/null; echo "$n rc $rc"; }
ROWS="--row t1-q1-b1 --row t1-q1-b16 --row t32-q1-warp --row t16-q16-s16-b16 --row t64-q64-s64-b16"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/gic-mps CUDA_MPS_LOG_DIRECTORY=/tmp/gic-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started"
for k in 1 2; do
	run rate-procs$k 150 $G rate --procs 2 $ROWS --json $O/rate-procs$k.json
	grep -E "message rate|rror|PE|invalid" $O/rate-procs$k.log | awk '{print "  procs: " $0}' | cut -c1-140 | head -14
	run rate-one$k 90 $G rate $ROWS
	grep -E "message rate" $O/rate-one$k.log | awk '{print "  one: " $1, $3, $4, $5, $6, $7, $8}'
	run lat-procs$k 90 $G lat --procs 2 --path gda-inline --order fence-gpu -n 2000
	grep -E "put\+completion|rtt|rror|PE" $O/lat-procs$k.log | head -4 | cut -c1-140
done
echo quit | nvidia-cuda-mps-control
for _ in $(seq 1 20); do pgrep -f nvidia-cuda-mps >/dev/null || break; sleep 0.5; done
pgrep -f nvidia-cuda-mps >/dev/null && echo "MPS still running" || echo "MPS stopped"
run qsuite 300 $G suite --quick --json $O/qsuite.json; grep -ciE "invalid|FAIL" $O/qsuite.log; grep -c '"name"' $O/qsuite.json
ls /dev/shm | grep -c gic-gpu-peer
cd $OUT && tar czf t9.tgz t9 && rm -rf t9
