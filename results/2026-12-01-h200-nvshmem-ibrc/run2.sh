#!/bin/bash
# Device run 4: NVSHMEM IBRC rate and loaded rows under MPS, and the SASS of
# the put path (where the IBRC issue time goes). Logs under $OUT (<= 8 files).
cd "$(dirname "$0")"
tar xzf devbin.tgz
B=$PWD/b; NV=$PWD/nv
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version,compute_mode --format=csv,noheader
step() { local name=$1; shift; local t0=$(date +%s%N); timeout ${T:-200} "$@" > $OUT/$name.log 2>&1; local rc=$?; local ms=$(( ($(date +%s%N) - t0) / 1000000 )); printf '%-16s rc=%-3s %6sms  %s\n' "$name" "$rc" "$ms" "$(tail -1 $OUT/$name.log | cut -c1-120)"; }
export LD_LIBRARY_PATH=$NV
export NVSHMEM_REMOTE_TRANSPORT=ibrc NVSHMEM_DISABLE_P2P=1 NVSHMEM_DISABLE_GDRCOPY=1 GIC_NVSHMEM_LIMIT_S=180
export CUDA_MPS_PIPE_DIRECTORY=/tmp/gic-mps CUDA_MPS_LOG_DIRECTORY=/tmp/gic-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started"
T=190 step ibrc_rate $B/gic-emu --sysfs $B/bench/gic/gic rate --quick --row nvshmem-t1 --row nvshmem-t32 --row nvshmem-t256 --json $OUT/ibrc_rate.json
T=190 step ibrc_loaded $B/gic-emu --sysfs $B/bench/gic/gic loaded --quick --path nvshmem --json $OUT/ibrc_loaded.json
echo quit | nvidia-cuda-mps-control
for i in $(seq 1 20); do pgrep -f nvidia-cuda-mps >/dev/null || break; sleep 0.5; done
pgrep -fl nvidia-cuda-mps || echo "MPS stopped"
for f in ibrc_rate ibrc_loaded; do echo "== $f"; grep -E '^(name|nvshmem)|skipped|exited|limit' $OUT/$f.log | head -12; done
# The put path's SASS: the oneway kernel for nvshmem_putmem_nbi and what it calls.
cuobjdump -sass $B/bench/gic/gic-nvshmem-pe > /tmp/all.sass 2>/dev/null
awk '/Function : .*oneway_kernel/{p=1} p&&/Function : /&&!/oneway_kernel/{p=0} p' /tmp/all.sass > $OUT/oneway.sass
grep -n 'Function : ' /tmp/all.sass | grep -i 'oneway\|proxy\|put' | head -20
wc -l $OUT/oneway.sass
