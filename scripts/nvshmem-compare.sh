#!/usr/bin/env bash
# scripts/nvshmem-compare.sh - issue 15 item 4: NVSHMEM's own NIC paths
# (IBGDA and IBRC, unmodified, on the emulated rdma-core device over
# softnic's CPU engine) beside mini-gda, one operation at a time, in one
# run on one GPU. Rows:
#   gda-gpu   gic lat --path gda-inline              (softnic GPU engine)
#   gda-cpu   gic lat --path gda-inline --engine cpu (softnic CPU engine,
#             the engine the emulated device runs NVSHMEM's QPs on)
#   ibgda     gic lat --path nvshmem, NVSHMEM_IB_ENABLE_IBGDA=1 with its
#             CPU-assisted doorbell (NIC_HANDLER=cpu_host_memory) and NIC
#             buffers in host memory (GPU-memory umems are not modelled)
#   ibrc      gic lat --path nvshmem, NVSHMEM_REMOTE_TRANSPORT=ibrc
# With ROWS=1 also the NVSHMEM rate rows (t4096-c16 at -n $RATE_N) and the
# loaded rows (paced and unpaced, few writers: softnic's IBRC/IBGDA carry
# about 0.08 M msg/s, so 64 unpaced writers queue seconds of work ahead of
# every probe).
# The two NVSHMEM PEs are two processes on the one GPU under an MPS daemon
# started and stopped here (without it the responder's CUDA copies wait for
# the GPU's time slice); P2P is disabled so that NVSHMEM takes its NIC path.
# Prints one line per row and writes JSON and logs under $OUT.
# Usage: scripts/nvshmem-compare.sh BUILD NVSHMEM_LIB_DIR
#   BUILD            a build tree holding bench/gic/gic, gic-nvshmem-pe,
#                    gic-emu and emu/ (the emulated libraries)
#   NVSHMEM_LIB_DIR  libnvshmem_host.so.3 and the transports of the wheel
#   OUT (default compare-logs), ROWS (0), RATE_N (10), STEP_S (150)
set -uo pipefail
b=${1:?usage: nvshmem-compare.sh BUILD NVSHMEM_LIB_DIR}
nv=${2:?usage: nvshmem-compare.sh BUILD NVSHMEM_LIB_DIR}
out=${OUT:-compare-logs}
gic=$b/bench/gic/gic
emu=$b/gic-emu
mkdir -p "$out"
for f in "$gic" "$emu" "$b/bench/gic/gic-nvshmem-pe" "$nv/libnvshmem_host.so.3"; do
	[ -e "$f" ] || { echo "nvshmem-compare: $f missing"; exit 2; }
done
export CUDA_MODULE_LOADING=EAGER # docs/DESIGN.md §4.5: lazy loading deadlocks persistent kernels
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version,compute_mode \
	--format=csv,noheader

# step NAME CMD...: runs CMD under a time limit, logs to $out/NAME.log.
step() {
	local name=$1 t0 rc
	shift
	t0=$(date +%s)
	timeout "${STEP_S:-150}" "$@" >"$out/$name.log" 2>&1
	rc=$?
	printf '%-16s rc=%-3s %4ss\n' "$name" "$rc" "$(($(date +%s) - t0))"
	grep -E 'skipped|exited|timed out|FAILED|wrong' "$out/$name.log" | head -4 | cut -c1-150
}

step gda-gpu "$gic" lat --quick --path gda-inline --json "$out/gda-gpu.json"
step gda-cpu "$gic" lat --quick --path gda-inline --engine cpu --json "$out/gda-cpu.json"

export LD_LIBRARY_PATH=$nv NVSHMEM_DISABLE_P2P=1 NVSHMEM_DISABLE_GDRCOPY=1
export GIC_NVSHMEM_LIMIT_S=$((${STEP_S:-150} - 20))
export CUDA_MPS_PIPE_DIRECTORY=/tmp/gic-mps CUDA_MPS_LOG_DIRECTORY=/tmp/gic-mps-log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
nvidia-cuda-mps-control -d && echo "MPS started"

# transport NAME ENV...: the NVSHMEM rows over one transport.
transport() {
	local t=$1
	shift
	step "$t-lat" env "$@" "$emu" --sysfs "$gic" lat --quick --path nvshmem \
		--json "$out/$t-lat.json"
	[ "${ROWS:-0}" = 1 ] || return 0
	step "$t-rate" env "$@" "$emu" --sysfs "$gic" rate --quick --row nvshmem-t1 \
		--row nvshmem-t32 --row nvshmem-t256 --json "$out/$t-rate.json"
	step "$t-rate4096" env "$@" "$emu" --sysfs "$gic" rate -n "${RATE_N:-10}" -w 2 \
		--row nvshmem-t4096-c16 --json "$out/$t-rate4096.json"
	step "$t-loaded" env "$@" "$emu" --sysfs "$gic" loaded --quick --path nvshmem \
		--bg-ctas 1,4 --pace 100000 --json "$out/$t-loaded-paced.json"
	step "$t-loaded1" env "$@" "$emu" --sysfs "$gic" loaded --quick --path nvshmem \
		--bg-ctas 1 --json "$out/$t-loaded-unpaced.json"
}
transport ibgda NVSHMEM_IB_ENABLE_IBGDA=1 NVSHMEM_IBGDA_NIC_HANDLER=cpu_host_memory \
	NVSHMEM_IBGDA_FORCE_NIC_BUF_MEMTYPE=hostmem
transport ibrc NVSHMEM_REMOTE_TRANSPORT=ibrc

echo quit | nvidia-cuda-mps-control
for _ in $(seq 1 20); do pgrep -f nvidia-cuda-mps >/dev/null || break; sleep 0.5; done
pgrep -f nvidia-cuda-mps >/dev/null && echo "MPS still running" || echo "MPS stopped"

# One line per row: file, name, metric, p50/p99, valid.
python3 - "$out" <<'EOF'
import glob, json, os, sys
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    try:
        d = json.load(open(f))
    except ValueError as e:
        print("%s: unreadable (%s)" % (f, e)); continue
    for r in d.get("results", []):
        print("%-22s %-40s %-22s %10.3f %10.3f %s valid=%s" % (
            os.path.basename(f)[:-5], r["name"][:40], r["metric"][:22], r["p50"],
            r["p99"], r["unit"], "yes" if r["validated"] else "NO"))
EOF
