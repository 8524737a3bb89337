#!/bin/sh
# bench/gic/test_procs_death.sh GIC GIC_EMU SUBCOMMAND [ARGS...]: `gic
# SUBCOMMAND --host --provider mlx5 --procs 2 ARGS` (a run long enough to be
# caught mid-way) with PE 1 killed (SIGKILL) mid-run. The driver must
# report that PE 1 was killed, stop PE 0, and exit non-zero well within the
# limit; no PE may be left. Exit status 0 when it did, 1 when not.
gic=$1
emu=$2
shift 2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s)
"$emu" "$gic" "$@" --host --provider mlx5 --procs 2 >"$log" 2>&1 &
driver=$!
pe1=""
for _ in $(seq 1 300); do # up to 30 s for PE 1 to start
	pe1=$(pgrep -P "$driver" -f -- '__pe-pair 1 ' | head -n 1)
	[ -n "$pe1" ] && break
	sleep 0.1
done
if [ -z "$pe1" ]; then
	echo "PE 1 never appeared"; kill "$driver" 2>/dev/null; wait "$driver"; cat "$log"; exit 1
fi
sleep 2 # mid-run: the rows are under way
pe0=$(pgrep -P "$driver" -f -- '__pe-pair 0 ' | head -n 1)
kill -9 "$pe1"
wait "$driver"
rc=$?
took=$(( $(date +%s) - start ))
cat "$log"
echo "driver exit status $rc after $took s"
[ "$rc" -ne 0 ] || { echo "FAIL: the driver exited 0"; exit 1; }
grep -q 'mlx5 PE 1 was killed by signal 9' "$log" || { echo "FAIL: PE 1's death not reported"; exit 1; }
[ "$took" -lt 60 ] || { echo "FAIL: took $took s"; exit 1; }
if [ -n "$pe0" ] && kill -0 "$pe0" 2>/dev/null; then echo "FAIL: PE 0 is left"; exit 1; fi
echo "ok"
