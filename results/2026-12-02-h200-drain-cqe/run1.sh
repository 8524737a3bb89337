#!/bin/bash
# Call 1 (twelfth session): one fence per batch's CQEs (v1) against the
# engine before it (v0) and a diagnostic engine with no CQE fence (v3,
# incorrect ordering, only to bound what the fences cost); v1's exactness
# programs; then gic lat --procs 2 in GPU mode under MPS beside
# gic-gpu-xproc and one-process gic lat.
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null
mkdir -p /tmp/b && tar xJf devbin5/b.txz -C /tmp/b
export CUDA_MODULE_LOADING=EAGER
B=/tmp/b O=$OUT/t1; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version,clocks.sm,compute_mode --format=csv,noheader
run() { local n=$1 lim=$2; shift 2; timeout -s KILL $lim "$@" > $O/$n.log 2>&1; local rc=$?; pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null; echo "$n rc $rc"; }
R=$B/v1
run conf 90 $R/gic-gpu-conformance; grep -c " ok " $O/conf.log; grep -ci fail $O/conf.log
for p in fidelity recv engine-check; do run $p 60 $R/gic-gpu-$p; tail -1 $O/$p.log | cut -c1-100; done
run suite 120 $R/gic-gpu-suite gpu; tail -1 $O/suite.log
run check 60 $R/gic-gpu-pipeline --check; tail -1 $O/check.log
for k in 1 2; do for v in v0 v1 v3; do
	run rate-$v$k 60 $B/$v/gic rate --row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16
	grep "message rate with drain" $O/rate-$v$k.log | awk -v v=$v '{print "  " v ": " $1, $7}'
	run batch-$v$k 40 $B/$v/gic-gpu-pipeline --batch 500; grep "trace off" $O/batch-$v$k.log | tail -1 | sed "s/^/  $v: /"
	run lat-$v$k 30 $B/$v/gic lat --path gda-inline --order fence-gpu --metric putc --metric rtt -n 1000
	grep -E "put\+completion|rtt" $O/lat-$v$k.log | awk -v v=$v '{print "  " v ": " $1, $2, $3, $4, $5}'
done; done
export CUDA_MPS_PIPE_DIRECTORY=/tmp/gic-mps CUDA_MPS_LOG_DIRECTORY=/tmp/gic-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started"
for k in 1 2; do
	run procs$k 90 $R/gic lat --procs 2 --path gda-inline --order fence-gpu -n 5000 --json $O/procs$k.json
	grep -E "issue|put\+completion|rtt|rror|refus|invalid" $O/procs$k.log | head -6 | awk '{print "  procs: " $0}' | cut -c1-150
	run xproc$k 60 $R/gic-gpu-xproc -n 10000; grep -E "p50|payload" $O/xproc$k.log | head -3 | cut -c1-150
	run one$k 30 $R/gic lat --path gda-inline --order fence-gpu --metric putc --metric rtt -n 5000
	grep -E "put\+completion|rtt" $O/one$k.log | awk '{print "  one: " $1, $2, $3, $4, $5}'
done
echo quit | nvidia-cuda-mps-control
for _ in $(seq 1 20); do pgrep -f nvidia-cuda-mps >/dev/null || break; sleep 0.5; done
pgrep -f nvidia-cuda-mps >/dev/null && echo "MPS still running" || echo "MPS stopped"
ls /dev/shm | grep -c gic-gpu-peer
cd $OUT && tar czf t1.tgz t1 && rm -rf t1
