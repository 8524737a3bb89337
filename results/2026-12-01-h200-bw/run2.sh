#!/bin/bash
# Device call 2 (ninth session): latency of the engine with the jobs'
# pending word read every idle pass (new) against every fourth (B) and the
# engine before the change (old, 4f6b5c1), alternated; the one-QP sweep and
# 16 QPs on the wide engine for new and B; then host-rung doorbells through
# the mlx5 provider (emulated device) after the fixture fix, beside softnic.
cd "$(dirname "$0")/../.." || exit 1
mkdir -p devbin2/x && tar xJf devbin2/new.txz -C devbin2/x && tar xJf devbin/devbin.txz -C devbin2/x
export CUDA_MODULE_LOADING=EAGER
O=$OUT/r2; mkdir -p $O
for r in 1 2 3; do for v in old new B; do
	b=devbin2/x/n; [ $v = old ] && b=devbin2/x/b; [ $v = B ] && b=devbin2/x/B
	timeout 60 $b/bench/gic/gic lat --path gda-inline --order fence-gpu --metric putc --metric rtt \
		-n 1000 > $O/lat-$v-$r.log 2>&1
	echo "$v $r $(grep -E 'put\+completion|rtt' $O/lat-$v-$r.log | awk '{print $4}' | tr '\n' ' ')"
done; done
for v in new B; do
	b=devbin2/x/n; [ $v = B ] && b=devbin2/x/B
	timeout 120 $b/bench/gic/gic payload -b 65536 -e 4194304 -f 4 -n 200 --reps 3 --json $O/bw1-$v.json > $O/bw1-$v.log 2>&1
	echo "$v bw1: $(grep goodput $O/bw1-$v.log | awk '{print $3, $5}' | tr '\n' ' ')"
	timeout 120 $b/bench/gic/gic payload -b 1048576 -e 1048576 -n 200 --qps 16 --reps 3 --engine-blocks 16 --engine-warps 8 \
		--json $O/bwq16w-$v.json > $O/bwq16w-$v.log 2>&1
	echo "$v q16 wide: $(grep goodput $O/bwq16w-$v.log | awk '{print $3, $5}')"
done
n=devbin2/x/n; g=$n/bench/gic/gic
for p in softnic mlx5; do
	pre=""; [ $p = mlx5 ] && pre="$n/gic-emu"
	timeout 120 $pre $g rate --provider $p --row t16-q16-s16-b16-hostdb --row t4096-q16-s16-cta-hostdb \
		--json $O/rate-$p.json > $O/rate-$p.log 2>&1; echo "rate hostdb $p rc $?"
	grep "message rate" $O/rate-$p.log | cut -c1-105; grep -i "rror\|fail" $O/rate-$p.log | head -3
	timeout 120 $pre $g lat --provider $p --path gda-hostdb --metric putc -n 500 \
		--json $O/lat-hdb-$p.json > $O/lat-hdb-$p.log 2>&1; echo "lat gda-hostdb $p rc $?"
	grep "gda-hostdb" $O/lat-hdb-$p.log | cut -c1-105; grep '"nic"' $O/lat-hdb-$p.json | head -1 | cut -c1-120
done
cd $OUT && tar czf r2.tgz r2 && rm -rf r2
