#!/bin/bash
# Device run 9 (eighth session): the GPU engine's fifth step beside the
# fourth (old/gic), alternated; every GPU engine program; the rate rows
# issue 17 judges (one QP drained with warp-cooperative posting, the 64-QP
# ceiling with drain) old and new; the quick GPU suite on the new engine.
cd "$(dirname "$0")" && mkdir -p x && tar xJf devbin.txz -C x && cd ..
export CUDA_MODULE_LOADING=EAGER
B=$PWD/devbin/x/b G=$B/bench/gic/gic OLD=$PWD/devbin/x/old/gic O=$OUT/r; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
show() { python3 -c "
import json,sys
for r in json.load(open(sys.argv[1]))['results']:
    print('  %-34s %-22s p50 %9.3f p99 %9.3f %s %s' % (r['name'][:34], r['metric'][:22], r['p50'], r['p99'], r['unit'], 'ok' if r['validated'] else 'NOT VALIDATED'))" $1 2>&1 | head -${2:-12}; }
lat() { timeout 200 $2 lat --path gda-inline --order fence-gpu --metric putc --metric rtt -n 1000 \
	--json $O/lat-$1.json > $O/lat-$1.log 2>&1; echo "lat $1 rc=$?"; show $O/lat-$1.json 4; }
lat old1 $OLD; lat new1 $G; lat old2 $OLD; lat new2 $G
OUT=$O/pipe GIC_GPU_BIN=$B ITERS=1000 timeout 420 bash scripts/pipeline-check.sh 2>&1 | grep -v "^gic lat" | sed -n '3,18p;/PASS\|FAIL\|pipeline-check/p'
for t in dc proxy-suite; do timeout 240 $B/gic-gpu-$t > $O/$t.log 2>&1; echo "gic-gpu-$t rc=$? $(tail -1 $O/$t.log)"; done
for v in old new; do X=$G; [ $v = old ] && X=$OLD
	timeout 200 $X rate --row t1-q1-b16 --row t32-q1-warp --row t256-q1-warp --row t64-q64-s64-b16 \
		--json $O/rate-$v.json > $O/rate-$v.log 2>&1; echo "rate $v rc=$?"; show $O/rate-$v.json 8
done
timeout 280 $G suite --quick --no-plots --out $O/suite --json $O/suite.json > $O/suite.log 2>&1; echo "suite rc=$?"
python3 -c "
import json; d=json.load(open('$O/suite.json')); b=[r['experiment']+':'+r['name'] for r in d['results'] if not r['validated']]
print(' ', len(d['results']), 'rows;', len(b), 'not validated', b[:5])"
cd $OUT && tar czf r.tgz r && rm -rf r
