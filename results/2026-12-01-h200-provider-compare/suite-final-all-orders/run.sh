#!/bin/bash
# Device run 12 (eighth session): every GPU mode with the fence that follows
# the queues' reader (fence-sys for softnic's CPU engine and mlx5): the
# quick GPU suite on softnic's GPU engine, its CPU engine, and the mlx5
# provider on the emulated device.
cd "$(dirname "$0")" && mkdir -p x && tar xJf devbin.txz -C x && cd ..
export CUDA_MODULE_LOADING=EAGER
B=$PWD/devbin/x/b G=$B/bench/gic/gic O=$OUT/r; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
for p in softnic-gpu softnic-cpu mlx5; do
	case $p in softnic-gpu) pre=""; fl="";; softnic-cpu) pre=""; fl="--engine cpu";;
	mlx5) pre="$B/gic-emu"; fl="--provider mlx5";; esac
	timeout 180 $pre $G suite --quick $fl --no-plots --only lat,rate,kernel,loaded,payload,conns --out $O/suite-$p --json $O/suite-$p.json > $O/suite-$p.log 2>&1
	echo "suite $p rc=$?"; python3 -c "
import json; d=json.load(open('$O/suite-$p.json')); b=[r['experiment']+':'+r['name'] for r in d['results'] if not r['validated']]
print(' ', d['run']['nic'][:60], '|', len(d['results']), 'rows;', len(b), 'not validated', b[:6])"
	grep -E "rror|failed" $O/suite-$p.log | grep -v NVSHMEM | head -3 | cut -c1-160
done
cd $OUT && tar czf r.tgz r && rm -rf r
