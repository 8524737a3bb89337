#!/bin/bash
# Device call (ninth session): the GPU engine's large-write bandwidth after
# the deeper warp copy and the shared large-copy jobs (scripts/bw-check.sh,
# old = 4f6b5c1's binaries from devbin/devbin.txz, new = this commit's
# build-dev sm_90 binaries from devbin2/new.txz), then host-rung doorbells
# through the mlx5 provider on the emulated device beside softnic.
cd "$(dirname "$0")/../.." || exit 1
mkdir -p devbin2/x && tar xJf devbin2/new.txz -C devbin2/x && tar xJf devbin/devbin.txz -C devbin2/x
export CUDA_MODULE_LOADING=EAGER
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
GIC_GPU_BIN=devbin2/x/n GIC_GPU_BIN_OLD=devbin2/x/b OUT=$OUT/bw ROUNDS=2 timeout 420 \
	bash scripts/bw-check.sh 2>&1 | tail -45 | cut -c1-160
n=devbin2/x/n; g=$n/bench/gic/gic; mkdir -p $OUT/hdb
for p in softnic mlx5; do
	pre=""; [ $p = mlx5 ] && pre="$n/gic-emu"
	timeout 120 $pre $g rate --provider $p --row t16-q16-s16-b16-hostdb --row t4096-q16-s16-cta-hostdb \
		--json $OUT/hdb/rate-$p.json > $OUT/hdb/rate-$p.log 2>&1; echo "rate hostdb $p rc $?"
	grep "message rate" $OUT/hdb/rate-$p.log | cut -c1-105
	timeout 120 $pre $g lat --provider $p --path gda-hostdb --metric putc -n 500 \
		--json $OUT/hdb/lat-$p.json > $OUT/hdb/lat-$p.log 2>&1; echo "lat gda-hostdb $p rc $?"
	grep "gda-hostdb" $OUT/hdb/lat-$p.log | cut -c1-105
done
cd $OUT && tar czf hdb.tgz hdb && rm -rf hdb && find bw -type f ! -name bw-logs.tgz -delete
