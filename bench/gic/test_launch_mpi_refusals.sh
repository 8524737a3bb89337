#!/bin/sh
# bench/gic/test_launch_mpi_refusals.sh MPIEXEC GIC GIC_EMU: what `gic ...
# --launch mpi` refuses, each before a NIC opens, with its exit status and
# a message that says why: an MPI job of 3 ranks (2), gic started without
# an MPI launcher (a job of 1 rank: 2), --launch mpi without --procs 2 (2)
# or without --host (2), a missing MPI module (1), and --procs 2 without
# --launch mpi under an MPI launcher of 2 ranks (2). Exit status 0 when
# every case did so, 1 when not.
mpiexec=$1
gic=$2
emu=$3
args="lat --host --quick --provider mlx5 --procs 2"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
bad=0
# check NAME STATUS PATTERN COMMAND...: COMMAND must exit STATUS (within 60
# s) and print PATTERN.
check() {
	name=$1 want=$2 pattern=$3
	shift 3
	timeout 60 "$@" >"$out" 2>&1
	rc=$?
	if [ "$rc" -eq "$want" ] && grep -q -- "$pattern" "$out"; then
		echo "ok: $name (status $rc)"
	else
		echo "FAIL: $name: status $rc (want $want), output:"; cat "$out"; bad=1
	fi
}
check "3 ranks" 2 "the MPI job has 3 ranks" \
	"$mpiexec" -np 3 "$emu" "$gic" $args --launch mpi
check "no MPI launcher" 2 "the MPI job has 1 rank" \
	env -u PMI_SIZE -u PMI_RANK "$gic" $args --launch mpi
check "no --procs 2" 2 "as two MPI ranks: add --procs 2" \
	"$gic" lat --host --quick --provider mlx5 --launch mpi
check "no --host" 2 "as two MPI ranks: add --host" \
	"$gic" lat --quick --provider mlx5 --procs 2 --launch mpi
check "no MPI module" 1 "cannot load the MPI module /nonexistent/gic-boot-mpi.so" \
	env GIC_MPI_MODULE=/nonexistent/gic-boot-mpi.so "$gic" $args --launch mpi
check "fork under mpiexec" 2 "under an MPI launcher (PMI_SIZE=2).*add --launch mpi" \
	"$mpiexec" -np 2 "$gic" $args
exit $bad
