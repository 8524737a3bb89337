#!/bin/bash
# Device run 7 (eighth session): the GPU engine's third step (b1335a3: the
# parked send CQ) beside the second (old/gic), alternated; every GPU engine
# program; rate rows old and new; proxy workers T8 and T16 (issue 16); the
# Figure 11 sweep to 1 MiB.
cd "$(dirname "$0")" && mkdir -p x && tar xJf devbin.txz -C x && cd ..
export CUDA_MODULE_LOADING=EAGER
B=$PWD/devbin/x/b G=$B/bench/gic/gic OLD=$PWD/devbin/x/old/gic O=$OUT/r; mkdir -p $O
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
for v in old new; do X=$G; [ $v = old ] && X=$OLD
	timeout 200 $X rate --row t1-q1-b1 --row t32-q1-lock --row t256-q1-handoff --row t16-q16-s16-b16 \
		--row t4096-q16-s16-cta --json $O/rate-$v.json > $O/rate-$v.log 2>&1; echo "rate $v rc=$?"
	python3 -c "
import json,sys
for r in json.load(open(sys.argv[1]))['results']:
    if r['metric'] in ('message rate','drain rate') or 'rate' in r['metric']: print('  %-28s %-22s %8.3f %s %s' % (r['name'][:28], r['metric'][:22], r['p50'], r['unit'], 'ok' if r['validated'] else 'NOT VALIDATED'))" $O/rate-$v.json | head -12
done
timeout 200 $G proxy -T 8,16 -R 16,32 -B 1,16 --protocol tuned --json $O/proxy-t16.json > $O/proxy-t16.log 2>&1
echo "proxy T8/T16 rc=$?"; show $O/proxy-t16.json 16; grep -i "unpinned\|fit" $O/proxy-t16.log | head -2
timeout 280 $G lat --sweep --path gda-pointer --path proxy-tuned --order fence-gpu --metric putc -b 8 -e 1M -f 4 \
	--json $O/f11.json > $O/f11.log 2>&1; echo "f11 rc=$?"; show $O/f11.json 24; grep -i "skipped" $O/f11.log | head -3
cd $OUT && tar czf r.tgz r && rm -rf r
