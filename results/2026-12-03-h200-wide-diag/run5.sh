#!/bin/bash
# Call 5: does the engine alone scale with WQEs per lane? ../2026-12-03-h200-wide-batch/prof/drain_alone.cu
# (16352 prefilled WQEs, one doorbell; conc-wide: one warp posting as
# t32-q1-warp with the wide quiet) on the default kernel (base 32), two per
# lane (base 64), three (w3) and four (w4, both at the 255-register cap).
cd "$(dirname "$0")/../.." || exit 1
export CUDA_MODULE_LOADING=EAGER
O=$OUT/c5; mkdir -p $O /tmp/v5 && tar xJf devbin16/c5.txz -C /tmp/v5
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
for k in 1 2; do for m in alone conc-wide; do for v in base:32 base:64 w3:64 w4:64; do
	n=${v%:*}; b=${v#*:}; a=$m; [ $m = alone ] && a=
	DRAIN_BATCH=$b timeout -s KILL 60 /tmp/v5/d/alone_$n 6 64 $a > $O/$m-$n-$b-$k.log 2>&1
	echo "$m $n b$b rc $?: $(grep round $O/$m-$n-$b-$k.log | tail -4 | sed 's/.*(\([0-9.]*\) M msg.*err \([0-9]*\), bad payloads \([0-9]*\).*/\1 e\2 p\3/' | tr '\n' ' ')"
done; done; done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader
cd $OUT && tar czf c5.tgz c5 && rm -rf c5
