#!/bin/bash
# Device call 2 (ninth session): the drain-loop change with its CQE fix
# (n: wip-drain-batch at e7d5fd8, build-dev sm_90) against main (o: the
# engine of 00d40a3 and later, the same tree without the drain change):
# n's conformance first, then rates and latency alternated, then n's other
# engine programs. Everything under one limit (the session's last device
# minutes).
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'bench/gic/gic|gic-gpu-' 2>/dev/null
mkdir -p devbin2/x && tar xJf devbin2/new.txz -C devbin2/x
export CUDA_MODULE_LOADING=EAGER
O=$OUT/d2; mkdir -p $O
t0=$(date +%s)
left() { echo $(( 200 - ($(date +%s) - t0) )); }
run() { local n=$1 lim=$2; shift 2; [ "$(left)" -lt "$lim" ] && lim=$(left); [ "$lim" -le 0 ] && { echo "$n: no time left"; return; }
	timeout -k 2 $lim "$@" > $O/$n.log 2>&1; echo "$n rc $?"; }
run conf-n 70 devbin2/x/n/gic-gpu-conformance; tail -2 $O/conf-n.log | cut -c1-150
for v in o n; do
	run rate-$v 40 devbin2/x/$v/bench/gic/gic rate --row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16 --row t16-q16-s16-b16
	grep "message rate" $O/rate-$v.log | awk '{print "  " $1, $2, $3, $4, $5, $6}'
	run lat-$v 25 devbin2/x/$v/bench/gic/gic lat --path gda-inline --order fence-gpu --metric putc --metric rtt -n 1000
	grep -E "put\+completion|rtt" $O/lat-$v.log | awk '{print "  " $1, $2, $3, $4, $5}'
done
for p in fidelity engine-check suite recv; do run $p-n 30 devbin2/x/n/gic-gpu-$p; tail -1 $O/$p-n.log | cut -c1-120; done
pkill -9 -f 'bench/gic/gic|gic-gpu-' 2>/dev/null
cd $OUT && tar czf d2.tgz d2 && rm -rf d2
