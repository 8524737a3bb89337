#!/bin/sh
# bench/gic/test_procs_death.sh [--mpi MPIEXEC] GIC GIC_EMU SUBCOMMAND
# [ARGS...]: `gic SUBCOMMAND --host --provider mlx5 --procs 2 ARGS` (a run
# long enough to be caught mid-way) with PE 1 killed (SIGKILL) mid-run. The
# driver must report that PE 1 was killed, stop PE 0, and exit non-zero
# well within the limit; no PE may be left. Exit status 0 when it did, 1
# when not.
#
# --mpi: the same run as `MPIEXEC -np 2 -disable-auto-cleanup ... --launch
# mpi`, rank 1 (PE 1) killed. hydra's -disable-auto-cleanup (and the shell
# below) keep it from ending rank 0 itself, so rank 0's own time limits
# must: it must say that PE 1 (MPI rank 1) did not answer and exit non-zero
# (that status checked, not mpiexec's: hydra reports 0 once a rank has left
# without MPI_Finalize, whatever rank 0's status).
mpiexec=""
if [ "$1" = "--mpi" ]; then
	mpiexec=$2
	shift 2
fi
gic=$1
emu=$2
shift 2
log=$(mktemp)
tag="gic-procs-death-$$"
trap 'rm -f "$log"' EXIT
# pe_pid RANK: the process of PE RANK of this run.
pe_pid() {
	if [ -z "$mpiexec" ]; then
		pgrep -P "$driver" -f -- "__pe-pair $1 " | head -n 1
		return
	fi
	for p in $(pgrep -x gic); do # the rank whose environment has our tag
		env=$(tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null)
		echo "$env" | grep -qx "GIC_TEST_TAG=$tag" && echo "$env" | grep -qx "PMI_RANK=$1" &&
			echo "$p" && return
	done
}
start=$(date +%s)
if [ -z "$mpiexec" ]; then
	"$emu" "$gic" "$@" --host --provider mlx5 --procs 2 >"$log" 2>&1 &
	reported='mlx5 PE 1 was killed by signal 9'
else
	# A shell between hydra and each rank reports the expected SIGKILL
	# (status 137) as 0 to hydra, which would otherwise end the whole job
	# at once on that status (tests/CMakeLists.txt's mpi.peer_killed does
	# the same); it ignores hydra's SIGUSR1 (a rank failed), as gic does.
	GIC_TEST_TAG=$tag "$mpiexec" -np 2 -disable-auto-cleanup \
		sh -c 'trap "" USR1; "$0" "$@"; s=$?; echo "test: rank $PMI_RANK exit status $s" >&2
		       [ $s -eq 137 ] && exit 0; exit $s' \
		"$emu" "$gic" "$@" --host --provider mlx5 --procs 2 --launch mpi >"$log" 2>&1 &
	reported='PE 1 (MPI rank 1) did not answer'
fi
driver=$!
pe1=""
for _ in $(seq 1 300); do # up to 30 s for PE 1 to start
	pe1=$(pe_pid 1)
	[ -n "$pe1" ] && break
	sleep 0.1
done
if [ -z "$pe1" ]; then
	echo "PE 1 never appeared"; kill "$driver" 2>/dev/null; wait "$driver"; cat "$log"; exit 1
fi
sleep 2 # mid-run: the rows are under way
pe0=$(pe_pid 0)
kill -9 "$pe1"
wait "$driver"
rc=$?
took=$(( $(date +%s) - start ))
cat "$log"
echo "driver exit status $rc after $took s"
if [ -n "$mpiexec" ]; then # rank 0's own status
	rc=0
	grep -q 'test: rank 0 exit status [1-9]' "$log" && rc=1
fi
[ "$rc" -ne 0 ] || { echo "FAIL: the driver (rank 0) exited 0"; exit 1; }
grep -q "$reported" "$log" || { echo "FAIL: PE 1's death not reported"; exit 1; }
[ "$took" -lt 60 ] || { echo "FAIL: took $took s"; exit 1; }
if [ -n "$pe0" ] && kill -0 "$pe0" 2>/dev/null; then echo "FAIL: PE 0 is left"; exit 1; fi
echo "ok"
