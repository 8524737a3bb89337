#!/usr/bin/env bash
# Issue 18: every two-GPU run in one script, for a host with two GPUs
# (nvidia-h200-x2). Nothing here has run yet: the two-GPU machine was not
# lent when it was written (2026-12-02); each step says what it checks.
#
#   scripts/two-gpu.sh BUILD NVSHMEM_LIB_DIR [NCCL_LIB_DIR]
#
# BUILD: a build tree (bench/gic/gic, gic-emu with emu/, gic-gpu-suite,
# gic-gpu-xproc, gic-gpu-mpi). NVSHMEM_LIB_DIR: our wheel's lib folder
# (.deps/pip/nvidia/nvshmem/lib: libnvshmem_host.so.3 and its plugins), as
# scripts/nvshmem-compare.sh takes it. NCCL_LIB_DIR: a folder with
# libnccl.so.2 of NCCL with GIN (2.28 or later); without it the NCCL steps are
# skipped, said. Logs and JSON under $OUT (default two-gpu-logs); one line
# per step with its status; "N passed, N failed, N skipped" last.
set -uo pipefail
b=${1:?usage: two-gpu.sh BUILD NVSHMEM_LIB_DIR [NCCL_LIB_DIR]}
nv=${2:?usage: two-gpu.sh BUILD NVSHMEM_LIB_DIR [NCCL_LIB_DIR]}
nccl=${3:-}
out=${OUT:-two-gpu-logs}
gic=$b/bench/gic/gic
emu=$b/gic-emu
mkdir -p "$out"
export CUDA_MODULE_LOADING=EAGER # docs/DESIGN.md §4.5: lazy loading deadlocks persistent kernels
ngpus=$(nvidia-smi -L 2>/dev/null | wc -l)
nvidia-smi --query-gpu=index,name,clocks.sm,driver_version,compute_mode --format=csv,noheader
nvidia-smi topo -m >"$out/topo.txt" 2>&1
if [ "$ngpus" -lt 2 ]; then
	echo "two-gpu.sh: $ngpus GPU(s) here; every step needs two"
	echo "0 passed, 0 failed, 1 skipped"
	exit 2
fi
passed=0 failed=0 skipped=0
step() { # name seconds command...: one line, the log under $out
	local name=$1 secs=$2 t0 rc
	shift 2
	t0=$(date +%s)
	timeout -k 5 "$secs" "$@" >"$out/$name.log" 2>&1
	rc=$?
	if [ $rc = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
	printf '%-22s rc=%-3s %4ss\n' "$name" "$rc" "$(($(date +%s) - t0))"
	grep -E 'skipped|FAILED|failed|wrong|invalid' "$out/$name.log" | head -4 | cut -c1-160
	pkill -9 -f 'gic-gpu-xproc|gic-nvshmem-pe|gic-nccl-pe' 2>/dev/null
}
skip() { skipped=$((skipped + 1)); printf '%-22s skipped: %s\n' "$1" "$2"; }

# 1. The suite's two-GPU cases: PE1's memory on GPU 1, the GPU engine on GPU 0.
step suite-twogpu 300 "$b/gic-gpu-suite" twogpu
# 2. mini-gda with its peer as a process on the other GPU: softnic's GPU
#    engines of two processes, one per GPU (gic/softnic_gpu_peer.h; no MPS:
#    each process has a GPU of its own). Every operation and error, then the
#    latency rows (put+completion, rtt) beside the one-process rows.
step xproc-check 120 "$b/gic-gpu-xproc" --check --devices 0,1
step xproc-check-closed 120 "$b/gic-gpu-xproc" --check --peer-exit closed --devices 0,1
step xproc-lat 120 "$b/gic-gpu-xproc" -n 10000 --devices 0,1
step gda-lat 120 "$gic" lat --path gda-inline --order fence-gpu --json "$out/gda-lat.json"
# 3. softnic across two processes, one GPU each, over MPI (GPU regions by CUDA IPC).
if command -v mpiexec >/dev/null && [ -x "$b/gic-gpu-mpi" ]; then
	mpx="mpiexec -n 2"
	mpiexec --version 2>&1 | grep -q OpenRTE && mpx="mpiexec --allow-run-as-root -n 2"
	step gpu-mpi 180 $mpx "$b/gic-gpu-mpi" transfer
else
	skip gpu-mpi "no mpiexec or no $b/gic-gpu-mpi"
fi
# 4. NVSHMEM between the two GPUs: over NVLink (P2P, the two-GPU floor) beside
#    mini-gda, then IBRC and IBGDA on the emulated device (P2P off), each PE a
#    process on its own GPU.
( export LD_LIBRARY_PATH=$nv NVSHMEM_DISABLE_GDRCOPY=1
  step nvshmem-nvlink 200 "$gic" lat --path nvshmem --path gda-inline --json "$out/nvshmem-nvlink.json"
  export NVSHMEM_DISABLE_P2P=1
  step nvshmem-ibrc 200 env NVSHMEM_REMOTE_TRANSPORT=ibrc "$emu" --sysfs "$gic" lat --quick \
	--path nvshmem --json "$out/nvshmem-ibrc.json"
  step nvshmem-ibgda 200 env NVSHMEM_IB_ENABLE_IBGDA=1 NVSHMEM_IBGDA_NIC_HANDLER=cpu_host_memory \
	NVSHMEM_IBGDA_FORCE_NIC_BUF_MEMTYPE=hostmem "$emu" --sysfs "$gic" lat --quick --path nvshmem \
	--json "$out/nvshmem-ibgda.json"
  echo "$passed $failed" >"$out/.counts" )
read -r passed failed <"$out/.counts"
# 5. NCCL on the emulated device, one rank per GPU, P2P and SHM off, so that
#    its IB network transport carries everything: the barrier of every gin
#    row is an all-reduce whose sum is checked. GIN Proxy (NCCL_GIN_TYPE=2)
#    and GDAKI (3; NCCL's DOCA GPUNetIO, whose GPU-rung doorbell this host
#    cannot map: NCCL_GIN_GDAKI_NIC_HANDLER picks the CPU-assisted one, set
#    GDAKI_NIC_HANDLER to its number for this NCCL).
if [ -n "$nccl" ] && [ -e "$nccl/libnccl.so.2" ]; then
	( export LD_LIBRARY_PATH=$nccl NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NET=IB NCCL_DEBUG=WARN
	  step gin-proxy-lat 200 env NCCL_GIN_TYPE=2 "$emu" --sysfs "$gic" lat --path gin \
		--json "$out/gin-proxy-lat.json"
	  step gin-proxy-rate 200 env NCCL_GIN_TYPE=2 "$emu" --sysfs "$gic" rate --quick --row gin \
		--json "$out/gin-proxy-rate.json"
	  step gin-gdaki-lat 200 env NCCL_GIN_TYPE=3 ${GDAKI_NIC_HANDLER:+NCCL_GIN_GDAKI_NIC_HANDLER=$GDAKI_NIC_HANDLER} \
		"$emu" --sysfs "$gic" lat --path gin --json "$out/gin-gdaki-lat.json"
	  echo "$passed $failed" >"$out/.counts" )
	read -r passed failed <"$out/.counts"
else
	skip nccl "no libnccl.so.2 in '${nccl:-}' (third argument)"
fi
rm -f "$out/.counts"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" = 0 ]
