#!/usr/bin/env bash
# scripts/nvshmem-kernel.sh - issue 16 item 1: `gic kernel --path nvshmem`
# where it runs: the fma caller (8 live values, 528 x 256, Table 14) with
# NVSHMEM's send path (none, code, send and sendwait with 16 messages of
# 8 B per block), PE 0 timing the kernel, PE 1 checking every payload,
# beside mini-gda's `gic kernel` rows of the same caller in the same run.
# The two PEs share the one GPU under an MPS daemon started and stopped
# here, P2P disabled, over NVSHMEM's IBRC on the emulated rdma-core device
# (scripts/nvshmem-compare.sh says why).
# Prints one line per configuration (registers, spill, blocks/SM, time, loss,
# waiting loss, valid) and writes JSON and logs under $OUT.
# Usage: scripts/nvshmem-kernel.sh BUILD NVSHMEM_LIB_DIR
#   BUILD            a build tree holding bench/gic/gic, gic-nvshmem-pe,
#                    gic-emu and emu/ (the emulated libraries)
#   NVSHMEM_LIB_DIR  libnvshmem_host.so.3 and the transports of the wheel
#   OUT (default kernel-logs), STEP_S (60), ARGS (extra gic kernel flags,
#   e.g. "--quick" or "--live 64")
set -uo pipefail
b=${1:?usage: nvshmem-kernel.sh BUILD NVSHMEM_LIB_DIR}
nv=${2:?usage: nvshmem-kernel.sh BUILD NVSHMEM_LIB_DIR}
out=${OUT:-kernel-logs}
gic=$b/bench/gic/gic
emu=$b/gic-emu
mkdir -p "$out"
for f in "$gic" "$emu" "$b/bench/gic/gic-nvshmem-pe" "$nv/libnvshmem_host.so.3"; do
	[ -e "$f" ] || { echo "nvshmem-kernel: $f missing"; exit 2; }
done
export CUDA_MODULE_LOADING=EAGER # docs/DESIGN.md §4.5
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,driver_version \
	--format=csv,noheader

# step NAME CMD...: runs CMD under a time limit, logs to $out/NAME.log.
step() {
	local name=$1 t0 rc
	shift
	t0=$(date +%s)
	timeout "${STEP_S:-60}" "$@" >"$out/$name.log" 2>&1
	rc=$?
	printf '%-10s rc=%-3s %4ss\n' "$name" "$rc" "$(($(date +%s) - t0))"
	grep -E 'skipped|exited|timed out|FAILED|wrong|error|expected' "$out/$name.log" | head -4 |
		cut -c1-150
}

# shellcheck disable=SC2086 # ARGS: words
step gda "$gic" kernel --msgs 16 ${ARGS:-} --json "$out/gda.json"

export LD_LIBRARY_PATH=$nv NVSHMEM_DISABLE_P2P=1 NVSHMEM_DISABLE_GDRCOPY=1
export NVSHMEM_REMOTE_TRANSPORT=ibrc
export GIC_NVSHMEM_LIMIT_S=$((${STEP_S:-60} - 15))
export CUDA_MPS_PIPE_DIRECTORY=/tmp/gic-mps CUDA_MPS_LOG_DIRECTORY=/tmp/gic-mps-log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
nvidia-cuda-mps-control -d && echo "MPS started"
# shellcheck disable=SC2086
step nvshmem "$emu" --sysfs "$gic" kernel --path nvshmem ${ARGS:-} --json "$out/nvshmem.json"
echo quit | nvidia-cuda-mps-control
for _ in $(seq 1 20); do pgrep -f nvidia-cuda-mps >/dev/null || break; sleep 0.5; done
pgrep -f nvidia-cuda-mps >/dev/null && echo "MPS still running" || echo "MPS stopped"

# One line per configuration: registers, spill, blocks/SM, time, loss
# (waiting loss), valid; then the params of one nvshmem row.
python3 - "$out" <<'EOF'
import json, os, sys
cols = ("registers", "spill", "blocks/SM", "time", "loss", "waiting loss")
print("%-34s %5s %5s %6s %9s %7s %7s %s" % ("row", "regs", "spill", "blk/SM", "time_us",
                                            "loss%", "wait%", "valid"))
for n in ("gda.json", "nvshmem.json"):
    f = os.path.join(sys.argv[1], n)
    try:
        d = json.load(open(f))
    except (OSError, ValueError) as e:
        print("%s: unreadable (%s)" % (f, e)); continue
    rows, params = {}, None
    for r in d.get("results", []):
        row = rows.setdefault(r["name"], {"valid": True})
        row[r["metric"]] = r["p50"]
        row["valid"] &= bool(r["validated"])
        if r["name"].startswith("nvshmem") and params is None:
            params = "transport=%s %s" % (r.get("transport"), r.get("params"))
    for name, row in rows.items():
        v = ["%.1f" % row[c] if c in row else "-" for c in cols]
        print("%-34s %5s %5s %6s %9s %7s %7s %s" % (name[:34], *v,
              "yes" if row["valid"] else "NO"))
    if params:
        print("  " + params[:230])
EOF
