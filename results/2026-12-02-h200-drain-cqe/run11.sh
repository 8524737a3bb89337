#!/bin/bash
# Call 11: gic payload --procs 2 in GPU mode (new: PE 0's posters copy into
# PE 1's GPU memory through GPU peers; PE 1 checks every slot) beside the
# one-process gda path, 1 and 16 QPs, under MPS; then one-process payload
# and the quick suite without MPS (the payload refactor).
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null
mkdir -p /tmp/b && tar xJf devbin5/g.txz -C /tmp/b
O=$OUT/t11; mkdir -p $O; G=/tmp/b/v6/gic
nvidia-smi --query-gpu=name,driver_version,clocks.sm,compute_mode --format=csv,noheader
run() { local n=$1 lim=$2; shift 2; timeout -s KILL $lim "$@" > $O/$n.log 2>&1; local rc=$?; pkill -9 -f '/gic ' 2>/dev/null; echo "$n rc $rc"; }
S="-b 8 -e 1048576 -f 8"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/gic-mps CUDA_MPS_LOG_DIRECTORY=/tmp/gic-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started"
for q in 1 16; do
	run pl-procs-q$q 150 $G payload --procs 2 --path gda --qps $q $S --json $O/pl-procs-q$q.json
	grep -E "goodput|first size|rror|PE|invalid" $O/pl-procs-q$q.log | awk '{print "  procs: " $0}' | cut -c1-130 | head -10
	run pl-one-q$q 90 $G payload --path gda --qps $q $S
	grep -E "goodput|first size" $O/pl-one-q$q.log | awk '{print "  one: " $0}' | cut -c1-110 | head -10
done
echo quit | nvidia-cuda-mps-control
for _ in $(seq 1 20); do pgrep -f nvidia-cuda-mps >/dev/null || break; sleep 0.5; done
pgrep -f nvidia-cuda-mps >/dev/null && echo "MPS still running" || echo "MPS stopped"
run qsuite 300 $G suite --quick --json $O/qsuite.json; grep -ciE "invalid|FAIL" $O/qsuite.log; grep -c '"name"' $O/qsuite.json
ls /dev/shm | grep -c gic-gpu-peer
cd $OUT && tar czf t11.tgz t11 && rm -rf t11
