#!/bin/bash
# Call 2: does t32-q1-warp's drain carry a fixed start-up cost? The row at
# several message counts per thread (T = a + N / R), and the pipeline's
# steady state at several round counts; then gic lat --procs 2 in GPU mode
# (the PE's job check fixed) under MPS beside gic-gpu-xproc and one-process
# gic lat.
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null
mkdir -p /tmp/b && tar xJf devbin5/c.txz -C /tmp/b
export CUDA_MODULE_LOADING=EAGER
R=/tmp/b/v4 O=$OUT/t2; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,compute_mode --format=csv,noheader
run() { local n=$1 lim=$2; shift 2; timeout -s KILL $lim "$@" > $O/$n.log 2>&1; local rc=$?; pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null; echo "$n rc $rc"; }
for k in 1 2; do for n in 32 64 128 256 511; do
	run rate-n$n-$k 60 $R/gic rate --row t32-q1-warp -n $n
	grep "message rate" $O/rate-n$n-$k.log | awk -v n=$n '{print "  n=" n ": " $0}' | cut -c1-160
done; done
for b in 50 125 250 500; do
	run pipe-$b 40 $R/gic-gpu-pipeline --batch $b; grep "trace off" $O/pipe-$b.log | tail -2 | sed "s/^/  /"
done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/gic-mps CUDA_MPS_LOG_DIRECTORY=/tmp/gic-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started"
for k in 1 2; do
	run procs$k 90 $R/gic lat --procs 2 --path gda-inline --order fence-gpu -n 4000 --json $O/procs$k.json
	grep -E "issue|put\+completion|rtt|rror|refus|invalid|PE" $O/procs$k.log | head -8 | awk '{print "  procs: " $0}' | cut -c1-160
	run xproc$k 60 $R/gic-gpu-xproc -n 10000; grep -E "p50|payload" $O/xproc$k.log | head -3 | cut -c1-150
	run one$k 30 $R/gic lat --path gda-inline --order fence-gpu --metric putc --metric rtt -n 4000
	grep -E "put\+completion|rtt" $O/one$k.log | awk '{print "  one: " $1, $2, $3, $4, $5}'
done
echo quit | nvidia-cuda-mps-control
for _ in $(seq 1 20); do pgrep -f nvidia-cuda-mps >/dev/null || break; sleep 0.5; done
pgrep -f nvidia-cuda-mps >/dev/null && echo "MPS still running" || echo "MPS stopped"
ls /dev/shm | grep -c gic-gpu-peer
cd $OUT && tar czf t2.tgz t2 && rm -rf t2
