#!/bin/bash
# Device run 8 (eighth session): the GPU engine's fourth step (b54c329: the
# 1-BB inline write's decode fast path, the record read with the view)
# beside the third (old/gic); every GPU engine program; gic lat --host
# --procs 2 through the mlx5 provider on the emulated device beside the
# one-process run; Figure 11 at 256 KiB .. 1 MiB; the quick GPU suite.
cd "$(dirname "$0")" && mkdir -p x && tar xJf devbin.txz -C x && cd ..
export CUDA_MODULE_LOADING=EAGER
B=$PWD/devbin/x/b G=$B/bench/gic/gic OLD=$PWD/devbin/x/old/gic M=$PWD/devbin/x/m O=$OUT/r; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
show() { python3 -c "
import json,sys
for r in json.load(open(sys.argv[1]))['results']:
    print('  %-34s %-15s p50 %9.3f p99 %9.3f %s %s' % (r['name'][:34], r['metric'], r['p50'], r['p99'], r['unit'], 'ok' if r['validated'] else 'NOT VALIDATED'))" $1 2>&1 | head -${2:-12}; }
lat() { timeout 200 $2 lat --path gda-inline --order fence-gpu --metric putc --metric rtt -n 1000 \
	--json $O/lat-$1.json > $O/lat-$1.log 2>&1; echo "lat $1 rc=$?"; show $O/lat-$1.json 4; }
lat old1 $OLD; lat new1 $G; lat old2 $OLD; lat new2 $G
OUT=$O/pipe GIC_GPU_BIN=$B ITERS=1000 timeout 420 bash scripts/pipeline-check.sh 2>&1 | grep -v "^gic lat" | sed -n '3,18p;/PASS\|FAIL\|pipeline-check/p'
for t in dc proxy-suite; do timeout 240 $B/gic-gpu-$t > $O/$t.log 2>&1; echo "gic-gpu-$t rc=$? $(tail -1 $O/$t.log)"; done
for n in 1 2; do
	timeout 200 $M/gic-emu $M/bench/gic/gic lat --host --provider mlx5 --procs $n --path gda-inline \
		--path gda-pointer --order fence-gpu --order release-sys -n 2000 --json $O/procs-$n.json \
		> $O/procs-$n.log 2>&1; echo "lat --host --procs $n (mlx5, emulated) rc=$?"; show $O/procs-$n.json 12
done
timeout 200 $G lat --sweep --path gda-pointer --path proxy-tuned --order fence-gpu --metric putc -b 256K -e 1M -f 2 \
	--json $O/f11.json > $O/f11.log 2>&1; echo "f11 rc=$?"; show $O/f11.json 8
timeout 280 $G suite --quick --no-plots --out $O/suite --json $O/suite.json > $O/suite.log 2>&1; echo "suite rc=$?"
python3 -c "
import json; d=json.load(open('$O/suite.json')); b=[r['experiment']+':'+r['name'] for r in d['results'] if not r['validated']]
print(' ', len(d['results']), 'rows;', len(b), 'not validated', b[:5])"
cd $OUT && tar czf r.tgz r && rm -rf r
