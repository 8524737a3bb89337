#!/bin/bash
# Call 13: a PE of `gic payload --procs 2` in GPU mode killed (SIGKILL)
# mid-run, without MPS and then under MPS: the driver must report PE 1's
# death, stop PE 0 and exit non-zero well within a minute; what is left in
# /dev/shm (the GPU peers' host files) is counted.
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null
mkdir -p /tmp/b && tar xJf devbin5/h.txz -C /tmp/b
O=$OUT/t13; mkdir -p $O; G=/tmp/b/v7/gic
nvidia-smi --query-gpu=name,driver_version,clocks.sm,compute_mode --format=csv,noheader
death() { # name
	local log=$O/$1.log start=$(date +%s) pe1="" pe0 rc
	timeout -s KILL 90 $G payload --procs 2 --path gda -b 1048576 -e 1048576 --reps 100 > $log 2>&1 &
	local drv=$!
	for _ in $(seq 1 300); do pe1=$(pgrep -f -- '__pe-pair 1 ' | head -n 1); [ -n "$pe1" ] && break; sleep 0.1; done
	sleep 3; pe0=$(pgrep -f -- '__pe-pair 0 ' | head -n 1)
	[ -n "$pe1" ] && kill -9 $pe1
	wait $drv; rc=$?
	echo "$1: pe1=$pe1 driver rc $rc after $(( $(date +%s) - start )) s; PE 0 left: $( [ -n "$pe0" ] && kill -0 $pe0 2>/dev/null && echo yes || echo no )"
	grep -E "killed|PE|rror" $log | head -4 | cut -c1-150
	echo "  /dev/shm gic-gpu-peer files: $(ls /dev/shm | grep -c gic-gpu-peer)"
}
death nomps
export CUDA_MPS_PIPE_DIRECTORY=/tmp/gic-mps CUDA_MPS_LOG_DIRECTORY=/tmp/gic-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started"
death mps
timeout -s KILL 60 $G lat --procs 2 --path gda-inline --order fence-gpu -n 1000 > $O/after.log 2>&1; echo "lat after, rc $?"
grep -E "put\+completion|rtt" $O/after.log | cut -c1-100
echo quit | nvidia-cuda-mps-control
for _ in $(seq 1 20); do pgrep -f nvidia-cuda-mps >/dev/null || break; sleep 0.5; done
pgrep -f nvidia-cuda-mps >/dev/null && echo "MPS still running" || echo "MPS stopped"
pkill -9 -f '/gic ' 2>/dev/null
cd $OUT && tar czf t13.tgz t13 && rm -rf t13
