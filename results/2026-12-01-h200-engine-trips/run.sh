#!/bin/bash
# Device run 4 (eighth session): the GPU engine with fewer dependent trips
# per WQE (0b2d7f4, issue 17) beside the engine of run 1 (old/gic: f69b289's
# engine, built at 2f785c4), alternated, then every GPU engine program.
cd "$(dirname "$0")" && mkdir -p x && tar xJf devbin.txz -C x && cd ..
export CUDA_MODULE_LOADING=EAGER
B=$PWD/devbin/x/b OLD=$PWD/devbin/x/old/gic O=$OUT/r; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
lat() { # tag gic
	timeout 200 $2 lat --path gda-inline --order fence-gpu --metric putc --metric rtt -n 1000 \
		--json $O/lat-$1.json > $O/lat-$1.log 2>&1; echo "$1 rc=$?"
	python3 -c "
import json,sys
for r in json.load(open('$O/lat-$1.json'))['results']:
    print('  %-30s %-15s p50 %7.3f p99 %7.3f max %8.3f %s %s' % (r['name'][:30], r['metric'], r['p50'], r['p99'], r['max'], r['validated'], r['params'].split('sm_mhz=')[-1][:6]))" 2>&1 | tail -4
}
lat old1 $OLD; lat new1 $B/bench/gic/gic; lat old2 $OLD; lat new2 $B/bench/gic/gic
OUT=$O/pipe GIC_GPU_BIN=$B ITERS=1000 timeout 420 bash scripts/pipeline-check.sh 2>&1 | grep -v "^gic lat" | tail -45
for t in dc proxy-suite; do timeout 240 $B/gic-gpu-$t > $O/$t.log 2>&1; echo "gic-gpu-$t rc=$? $(tail -1 $O/$t.log)"; done
cd $OUT && tar czf r.tgz r && rm -rf r
