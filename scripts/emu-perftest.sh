#!/usr/bin/env bash
# Runs Debian's perftest clients on the emulated rdma-core device (issue 13):
# ib_write_lat, ib_write_bw, ib_read_lat, ib_send_lat and ib_atomic_lat, each
# as a server and a client, two processes exchanging over loopback TCP (a
# port of its own per pair; the server first, the client started once the
# server listens and retried while it cannot connect), each under timeout.
# Size sweeps (-a) where the client takes them (not the atomic test, whose
# size is fixed at 8 bytes).
#
#   scripts/emu-perftest.sh <builddir> [outdir]
#
# Each side's report (stdout and stderr) goes to outdir (default
# <builddir>/emu/perftest) as <test>.server.txt and <test>.client.txt; a
# short summary goes to stdout. Fails (1) when a side exits non-zero, when a
# report lacks its result table, or when an emulated library says it lacks
# a function. Exits 77 (ctest's SKIP_RETURN_CODE) when perftest is not
# installed.
#
# Environment: GIC_PERFTEST_LAT_ITERS (iterations per size, latency tests,
# default 20), GIC_PERFTEST_BW_ITERS (bandwidth, default 20),
# GIC_PERFTEST_TIMEOUT (seconds per side, default 180), GIC_PERFTEST_PORT
# (the first port; default drawn from the process id), GIC_PERFTEST_SWEEP
# (0: one size per test instead of -a).
set -uo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
	echo "usage: $0 <builddir> [outdir]" >&2
	exit 2
fi
build=$1
emu="$(cd "$build/emu" 2>/dev/null && pwd)" || emu=""
if [ -z "$emu" ] || [ ! -e "$emu/libibverbs.so.1" ]; then
	echo "emu-perftest: $build/emu/libibverbs.so.1 is not built" >&2
	exit 1
fi
out=${2:-$emu/perftest}
lat_iters=${GIC_PERFTEST_LAT_ITERS:-20}
bw_iters=${GIC_PERFTEST_BW_ITERS:-20}
limit=${GIC_PERFTEST_TIMEOUT:-180}
sweep=${GIC_PERFTEST_SWEEP:-1}
port=${GIC_PERFTEST_PORT:-$((20000 + ($$ % 4000) * 8))}
tests=(ib_write_lat ib_write_bw ib_read_lat ib_send_lat ib_atomic_lat)

for t in "${tests[@]}"; do
	if ! command -v "$t" >/dev/null; then
		echo "emu-perftest: SKIP: $t is not installed (Debian package perftest;" \
			"scripts/install-deps.sh installs it)"
		exit 77
	fi
done
mkdir -p "$out" || exit 1
export LD_LIBRARY_PATH="$emu"
# perftest's stdout line-buffered, so that a report killed by timeout keeps
# the rows it printed.
linebuf=()
command -v stdbuf >/dev/null && linebuf=(stdbuf -oL)

# args_of TEST: the options both sides of TEST take.
args_of() {
	local a=(-d mlx5_0 -F)
	case $1 in
	*_lat) a+=(-n "$lat_iters") ;;
	*_bw) a+=(-n "$bw_iters") ;;
	esac
	if [ "$sweep" = 1 ] && [ "$1" != ib_atomic_lat ]; then
		a+=(-a)
	fi
	echo "${a[@]}"
}

# listening PORT: 0 when something listens on TCP port PORT (IPv4 or 6).
listening() {
	local hex
	hex=$(printf '%04X' "$1")
	cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
		awk -v p=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == p { f = 1 } END { exit !f }'
}

# free_port P: the first port from P on that nothing listens on.
free_port() {
	local p=$1
	while listening "$p"; do p=$((p + 1)); done
	echo "$p"
}

# wait_listen PORT PID: 0 once PORT listens, 1 when PID ends first or
# after 30 s.
wait_listen() {
	local i
	for ((i = 0; i < 300; i++)); do
		listening "$1" && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# has_table FILE: 0 when FILE holds perftest's result header and at least
# one row of numbers under it.
has_table() {
	awk '/#bytes/ { h = 1; next } h && $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ { r = 1 } END { exit !r }' "$1"
}

# run_client TEST PORT LOG ARGS...: the client, retried while it cannot
# reach the server (up to 10 times) and the server still runs. Its status.
run_client() {
	local t=$1 p=$2 log=$3 spid=$4 rc try
	shift 4
	for ((try = 1; try <= 10; try++)); do
		timeout "$limit" "${linebuf[@]}" "$t" "$@" -p "$p" localhost >"$log" 2>&1
		rc=$?
		if [ "$rc" -ne 0 ] && grep -qE "Couldn't connect|Unable to init the socket" "$log" &&
			kill -0 "$spid" 2>/dev/null; then
			sleep 0.5
			continue
		fi
		return "$rc"
	done
	return "$rc"
}

# summary TEST FILE: one line per reported size of a few (2 B, 8 B, 4 KiB,
# 64 KiB, 1 MiB, 8 MiB, or the only one).
summary() {
	awk -v t="$1" '
		/#bytes/ { h = 1; bw = ($0 ~ /BW/); next }
		h && $1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ { n++; row[n] = $0 }
		END {
			for (i = 1; i <= n; i++) {
				split(row[i], f)
				s = f[1]
				if (n > 1 && s != 2 && s != 8 && s != 4096 && s != 65536 && s != 1048576 &&
				    s != 8388608)
					continue
				if (bw)
					printf "  %-14s %8s B  x%-5s BW peak %9s MB/s  average %9s MB/s  %s Mpps\n",
						t, s, f[2], f[3], f[4], f[5]
				else
					printf "  %-14s %8s B  x%-5s t_min %9s  typical %9s  avg %9s  p99 %9s  p99.9 %9s  max %9s us\n",
						t, s, f[2], f[3], f[5], f[6], f[8], f[9], f[4]
			}
		}' "$2"
}

# check_side TEST SIDE FILE STATUS NEEDTABLE: 0 when that side passed;
# otherwise says why.
check_side() {
	local t=$1 side=$2 f=$3 rc=$4 need=$5 ok=0
	if [ "$rc" -ne 0 ]; then
		echo "emu-perftest: FAIL: $t $side exited with $rc$([ "$rc" -eq 124 ] &&
			echo " (timed out after ${limit} s)"): $(grep -vE '^[ -]*$' "$f" | tail -3 | tr '\n' '|')"
		ok=1
	fi
	if [ "$need" = 1 ] && ! has_table "$f"; then
		echo "emu-perftest: FAIL: $t $side: no result table in $f"
		ok=1
	fi
	if grep -qE "gic-emu: .*not implemented|no version information" "$f"; then
		echo "emu-perftest: FAIL: $t $side: $(grep -m1 -E "gic-emu: .*not implemented|no version information" "$f")"
		ok=1
	fi
	return "$ok"
}

# run_pair TEST: server, then client, on a port of their own; reports,
# checks and the summary. 0 when both sides passed.
run_pair() {
	local t=$1 p spid src crc slog="$out/$1.server.txt" clog="$out/$1.client.txt" args start
	read -r -a args <<<"$(args_of "$t")"
	p=$(free_port "$port")
	port=$((p + 1))
	start=$(date +%s)
	timeout "$limit" "${linebuf[@]}" "$t" "${args[@]}" -p "$p" >"$slog" 2>&1 &
	spid=$!
	if ! wait_listen "$p" "$spid"; then
		wait "$spid"
		echo "emu-perftest: FAIL: $t server did not listen on port $p (exit $?):" \
			"$(tail -3 "$slog" | tr '\n' '|')"
		return 1
	fi
	run_client "$t" "$p" "$clog" "$spid" "${args[@]}"
	crc=$?
	wait "$spid"
	src=$?
	echo "$t ${args[*]} (port $p): client $crc, server $src, $(($(date +%s) - start)) s"
	# The passive servers of read and atomic tests print no table.
	local sneed=1
	case $t in ib_read_lat | ib_atomic_lat) sneed=0 ;; esac
	check_side "$t" client "$clog" "$crc" 1
	local cok=$?
	check_side "$t" server "$slog" "$src" "$sneed"
	local sok=$?
	has_table "$clog" && summary "$t" "$clog"
	[ "$cok" -eq 0 ] && [ "$sok" -eq 0 ]
}

failed=0
for t in "${tests[@]}"; do
	run_pair "$t" || failed=$((failed + 1))
done
echo "emu-perftest: $((${#tests[@]} - failed)) of ${#tests[@]} pairs passed; reports in $out"
[ "$failed" -eq 0 ]
