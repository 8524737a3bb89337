#!/bin/bash
# Device call 11: after the last refactor (gic_sq_poll_locked as a run of
# one CQE, the pipeline's flag parsing): the engine programs, the drain
# rows and latency once, the quick suite.
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'bench/gic/gic|gic-gpu-' 2>/dev/null
mkdir -p devbin3/x && tar xJf devbin3/r.txz -C devbin3/x
export CUDA_MODULE_LOADING=EAGER
R=devbin3/x/n; O=$OUT/t11; mkdir -p $O
run() { local n=$1 lim=$2; shift 2; timeout -k 2 $lim "$@" > $O/$n.log 2>&1; echo "$n rc $?"; }
run conf 90 $R/gic-gpu-conformance; grep -c " ok " $O/conf.log; grep -ci fail $O/conf.log
for p in fidelity recv engine-check; do run $p 60 $R/gic-gpu-$p; tail -1 $O/$p.log | cut -c1-100; done
run suite 120 $R/gic-gpu-suite gpu; tail -1 $O/suite.log
run check 60 $R/gic-gpu-pipeline --check; tail -1 $O/check.log
run batch 40 $R/gic-gpu-pipeline --batch 500; grep "trace off" $O/batch.log | tail -1
run rate 60 $R/bench/gic/gic rate --row t32-q1-warp --row t32-q1-lock --row t256-q1-handoff --row t64-q64-s64-b16
grep "message rate with drain" $O/rate.log | awk '{print "  " $1, $7, $8}'
run lat 40 $R/bench/gic/gic lat --path gda-inline --order fence-gpu --metric putc --metric rtt -n 1000
grep -E "put\+completion|rtt" $O/lat.log | awk '{print "  " $1, $2, $3, $4, $5}'
run qsuite 200 $R/bench/gic/gic suite --quick --json $O/qsuite.json; grep -ciE "invalid|FAIL" $O/qsuite.log
pkill -9 -f 'bench/gic/gic|gic-gpu-' 2>/dev/null
cd $OUT && tar czf t11.tgz t11 && rm -rf t11
