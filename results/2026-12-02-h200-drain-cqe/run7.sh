#!/bin/bash
# Call 7: is t32-q1-warp's drain bound by the poster and the engine sharing
# SMs? The row with the engine on SMs of its own (--engine-sms 8 and 16,
# green contexts) against the shared placement, alternated.
cd "$(dirname "$0")/../.." || exit 1
pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null
mkdir -p /tmp/b && tar xJf devbin5/d.txz -C /tmp/b
export CUDA_MODULE_LOADING=EAGER
O=$OUT/t7; mkdir -p $O; G=/tmp/b/d/d0/gic
nvidia-smi --query-gpu=name,driver_version,clocks.sm,compute_mode --format=csv,noheader
for k in 1 2; do for s in 0 8 16; do
	a=""; [ $s -gt 0 ] && a="--engine-sms $s"
	timeout -s KILL 60 $G rate --row t32-q1-warp --row t256-q1-warp $a > $O/rate-s$s-$k.log 2>&1; echo "sms $s rc $?"
	grep "message rate" $O/rate-s$s-$k.log | awk -v s=$s '{print "  sms=" s ": " $1, $3, $4, $5, $6, $7, $8}'
done; done
pkill -9 -f 'gic-gpu-|/gic ' 2>/dev/null
cd $OUT && tar czf t7.tgz t7 && rm -rf t7
