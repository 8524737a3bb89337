#!/bin/bash
# Device run 7 (sixth session): NVSHMEM 3.8.0's IBGDA on the emulated device
# (CPU-assisted doorbell: NIC_HANDLER=cpu_host_memory; NIC buffers in host
# memory), two PEs on one H200 under MPS; then rows if it starts.
cd "$(dirname "$0")"
tar xzf devbin.tgz
B=$PWD/b; NV=$PWD/nv; G=$B/bench/gic/gic
mkdir -p $OUT/x
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version --format=csv,noheader
step() { local name=$1; shift; local t0=$(date +%s%N); timeout ${T:-200} "$@" > $OUT/x/$name.log 2>&1; local rc=$?; local ms=$(( ($(date +%s%N) - t0) / 1000000 )); printf '%-14s rc=%-3s %6sms  %s\n' "$name" "$rc" "$ms" "$(tail -1 $OUT/x/$name.log | cut -c1-110)"; }
export CUDA_MODULE_LOADING=EAGER LD_LIBRARY_PATH=$NV
export NVSHMEM_IB_ENABLE_IBGDA=1 NVSHMEM_IBGDA_NIC_HANDLER=cpu_host_memory NVSHMEM_IBGDA_FORCE_NIC_BUF_MEMTYPE=hostmem
export NVSHMEM_DISABLE_P2P=1 NVSHMEM_DISABLE_GDRCOPY=1 GIC_NVSHMEM_LIMIT_S=120
export CUDA_MPS_PIPE_DIRECTORY=/tmp/gic-mps CUDA_MPS_LOG_DIRECTORY=/tmp/gic-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started"
NVSHMEM_DEBUG=INFO NVSHMEM_DEBUG_SUBSYS=INIT,TRANSPORT T=150 step ibgda_lat $B/gic-emu --sysfs $G lat --quick --path nvshmem --json $OUT/x/ibgda_lat.json
grep -E '^nvshmem|skipped|exited' $OUT/x/ibgda_lat.log | head -12
grep -iE 'gic-emu|softnic|WARN|error|fail|IBGDA|handler' $OUT/x/ibgda_lat.log | grep -v 'Skipping NVLINK SHARP' | sort | uniq -c | sort -rn | head -30 | cut -c1-230
if grep -q '^nvshmem put .*issue' $OUT/x/ibgda_lat.log; then
  T=150 step ibgda_rate $B/gic-emu --sysfs $G rate --quick --row nvshmem-t1 --row nvshmem-t32 --json $OUT/x/ibgda_rate.json
  grep -E '^nvshmem' $OUT/x/ibgda_rate.log | head -4
  T=150 step ibgda_payload $B/gic-emu --sysfs $G payload --quick --path nvshmem --json $OUT/x/ibgda_payload.json
  grep -E '^nvshmem size=(8|64|4096|1048576) |90%' $OUT/x/ibgda_payload.log | head -8
fi
echo quit | nvidia-cuda-mps-control
for i in $(seq 1 20); do pgrep -f nvidia-cuda-mps >/dev/null || break; sleep 0.5; done
pgrep -fl nvidia-cuda-mps || echo "MPS stopped"
cd $OUT && tar czf x.tgz x && rm -rf x
