#!/bin/bash
# Call 3: gic lat --procs 2 in GPU mode (job check fixed; -n plus -w within
# the GPU mode's 4096) under MPS, alternated with gic-gpu-xproc and
# one-process gic lat under the same daemon.
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null
mkdir -p /tmp/b && tar xJf devbin5/c.txz -C /tmp/b
export CUDA_MODULE_LOADING=EAGER
R=/tmp/b/v4 O=$OUT/t3; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,compute_mode --format=csv,noheader
run() { local n=$1 lim=$2; shift 2; timeout -s KILL $lim "$@" > $O/$n.log 2>&1; local rc=$?; pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null; echo "$n rc $rc"; }
export CUDA_MPS_PIPE_DIRECTORY=/tmp/gic-mps CUDA_MPS_LOG_DIRECTORY=/tmp/gic-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started"
for k in 1 2 3; do
	run procs$k 90 $R/gic lat --procs 2 --path gda-inline --order fence-gpu -n 3000 --json $O/procs$k.json
	grep -E "issue|put\+completion|rtt|rror|refus|invalid|PE" $O/procs$k.log | head -8 | awk '{print "  procs: " $0}' | cut -c1-170
	run xproc$k 60 $R/gic-gpu-xproc -n 10000; grep -E "p50" $O/xproc$k.log | head -2 | cut -c1-150
	run one$k 30 $R/gic lat --path gda-inline --order fence-gpu --metric putc --metric rtt -n 3000
	grep -E "put\+completion|rtt" $O/one$k.log | awk '{print "  one: " $1, $2, $3, $4, $5}'
done
echo quit | nvidia-cuda-mps-control
for _ in $(seq 1 20); do pgrep -f nvidia-cuda-mps >/dev/null || break; sleep 0.5; done
pgrep -f nvidia-cuda-mps >/dev/null && echo "MPS still running" || echo "MPS stopped"
run procs-nomps 60 $R/gic lat --procs 2 --path gda-inline --order fence-gpu -n 1000
grep -E "put\+completion|rtt|rror|PE" $O/procs-nomps.log | head -6 | cut -c1-170
ls /dev/shm | grep -c gic-gpu-peer
cd $OUT && tar czf t3.tgz t3 && rm -rf t3
