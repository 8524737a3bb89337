#!/bin/bash
# results/2026-12-03-h200-gpu-pairs/check.sh: the first GPU run of `gic kernel --procs 2` and
# `gic loaded --procs 2` in GPU mode (softnic's GPU peers, commits e11a192,
# 897cd6f and 8277525 or later), beside the one-process runs of the same
# commands.
#   GIC=path/to/gic OUT=output-dir bash results/2026-12-03-h200-gpu-pairs/check.sh
# One GPU (device 0). The one-process runs go first without MPS; then the
# script starts an MPS daemon of its own (pipe and log under $OUT), runs the
# pairs and one peer-death check, and quits the daemon. Every run is under
# `timeout -s KILL 120` (the signal reaches the PEs too: timeout signals its
# process group); each PE also stops itself after GIC_PROCS_LIMIT_S=100.
# Output: one line per run (rc, rows, valid/invalid), at most ~20 lines;
# JSON and logs under $OUT. Expected total: about 2-3 minutes.
set -u
: "${GIC:?set GIC to the gic binary}" "${OUT:?set OUT to an output directory}"
mkdir -p "$OUT" || exit 1
export GIC_PROCS_LIMIT_S=100
nvidia-smi --query-gpu=name,driver_version,clocks.sm,compute_mode --format=csv,noheader \
	> "$OUT/gpu.txt" 2>&1
echo "gpu: $(head -1 "$OUT/gpu.txt")"

# summary NAME [ONE]: rows, valid/invalid, procs=2 rows, one key p50
# (kernel: the last "time" row, us; loaded: the first "loaded rtt", us);
# with ONE (the one-process run's name) whether the rows' names and
# metrics are the one-process run's, and ONE's key p50.
summary() {
	python3 - "$OUT/$1.json" "${2:+$OUT/$2.json}" <<'PY' 2>/dev/null || echo "no JSON"
import json, sys
def load(p):
    return json.load(open(p))
def key(r):
    k = [x for x in r if x["metric"] in ("time", "loaded rtt")]
    if not k:
        return "-"
    x = k[-1] if k[0]["metric"] == "time" else k[0]
    return "%s/%s %.1f" % (x["name"], x["metric"], x["p50"])
d = load(sys.argv[1])
r = d["results"]
v = sum(1 for x in r if x["validated"])
procs = sum(1 for x in r if "procs=2" in x["params"].split())
out = "rows %d valid %d invalid %d procs=2 %d; %s" % (len(r), v, len(r) - v, procs, key(r))
if len(sys.argv) > 2 and sys.argv[2]:
    try:
        o = load(sys.argv[2])["results"]
        same = [(x["name"], x["metric"]) for x in o] == [(x["name"], x["metric"]) for x in r]
        out += "; rows as one process: %s (one: %s)" % ("yes" if same else "NO", key(o))
    except Exception:
        out += "; no one-process JSON"
print(out)
PY
}

START=$(date +%s)
# limit: 120 s, or what is left of a 210 s budget (0: skip).
limit() {
	local left=$(( 210 - ($(date +%s) - START) ))
	[ "$left" -gt 120 ] && left=120
	[ "$left" -lt 10 ] && left=0
	echo "$left"
}

# run NAME ARGS...: one gic run, its line (NAME x-pair is compared to x-one).
run() {
	local name=$1 t0 rc lim one=""
	shift
	case $name in *-pair) one=${name%-pair}-one ;; esac
	lim=$(limit)
	[ "$lim" -gt 0 ] || { echo "$name skipped (time budget)"; return; }
	t0=$(date +%s)
	timeout -s KILL "$lim" "$GIC" "$@" --json "$OUT/$name.json" > "$OUT/$name.log" 2>&1
	rc=$?
	printf '%-8s rc=%-3s %3ss %s\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" "$(summary "$name" "$one")"
	[ "$rc" -eq 0 ] || grep -m 2 -E 'gic|PE[01]|rror' "$OUT/$name.log" | cut -c1-150 | sed 's/^/    /'
}

K1=(kernel --quick --caller both --msgs 0,1,16)
K2=(kernel --quick --size 7168 --msgs 4 -c 64 --variant sendwait)
K3=(kernel --msgs 16 --variant sendwait)        # the paper's work: the sizing probe
L1=(loaded --quick --bg-ctas 0,16)

run k1-one "${K1[@]}"
run k2-one "${K2[@]}"
run k3-one "${K3[@]}"
run l1-one "${L1[@]}"

# The pipe directory short (a socket path), the log under $OUT.
CUDA_MPS_PIPE_DIRECTORY=$(mktemp -d /tmp/gic-mps.XXXXXX) || exit 1
export CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY=$OUT/mps-log
mkdir -p "$CUDA_MPS_LOG_DIRECTORY"
if nvidia-cuda-mps-control -d; then echo "MPS started"; else echo "MPS did not start"; fi

run k1-pair "${K1[@]}" --procs 2
run k2-pair "${K2[@]}" --procs 2
run k3-pair "${K3[@]}" --procs 2
run l1-pair "${L1[@]}" --procs 2

# Peer death: PE 1 of a long kernel pair (2 s kernels: some 20 s) killed
# by its pid after 5 s; the driver must report it and end at once.
t0=$(date +%s)
lim=$(limit); [ "$lim" -gt 30 ] || lim=30
timeout -s KILL "$lim" "$GIC" kernel --work-us 2000000 --msgs 16 --variant sendwait --procs 2 \
	> "$OUT/death.log" 2>&1 &
tpid=$!
pe1=""
for _ in $(seq 1 150); do # timeout -> gic (the driver) -> its PEs
	driver=$(pgrep -P "$tpid" | head -n 1)
	[ -n "$driver" ] && pe1=$(pgrep -P "$driver" -f -- '__pe-pair 1 ' | head -n 1)
	[ -n "$pe1" ] && break
	sleep 0.1
done
[ -n "$pe1" ] && { sleep 5; kill -9 "$pe1"; }
wait "$tpid"
rc=$?
printf '%-10s rc=%-3s %3ss pe1=%s lines naming the kill: %s\n' death "$rc" \
	"$(( $(date +%s) - t0 ))" "${pe1:-none}" "$(grep -c -i 'killed\|signal 9' "$OUT/death.log")"
grep -m 2 -i 'killed\|signal 9' "$OUT/death.log" | cut -c1-150 | sed 's/^/    /'

echo quit | nvidia-cuda-mps-control
for _ in $(seq 1 20); do pgrep -u "$(id -u)" nvidia-cuda-mps >/dev/null || break; sleep 0.5; done
pgrep -u "$(id -u)" nvidia-cuda-mps >/dev/null && echo "MPS still running" || echo "MPS stopped"
rmdir "$CUDA_MPS_PIPE_DIRECTORY" 2>/dev/null
echo "peer files left in /dev/shm: $(ls /dev/shm 2>/dev/null | grep -c gic-gpu-peer); $(( $(date +%s) - START )) s"
