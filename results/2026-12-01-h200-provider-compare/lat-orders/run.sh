#!/bin/bash
# Device run 6 (eighth session): gic lat --order all on softnic's CPU engine
# and on the mlx5 provider (emulated device) with the fixture made again
# after a failed row; DC rows through the provider; the mmio-sys order.
cd "$(dirname "$0")" && mkdir -p x && tar xJf devbin.txz -C x && cd ..
export CUDA_MODULE_LOADING=EAGER
B=$PWD/devbin/x/b G=$PWD/devbin/x/b/bench/gic/gic O=$OUT/r; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
for p in softnic-gpu softnic-cpu mlx5; do
	case $p in softnic-gpu) pre=""; fl="";; softnic-cpu) pre=""; fl="--engine cpu";;
	mlx5) pre="$B/gic-emu"; fl="--provider mlx5";; esac
	timeout 200 $pre $G lat --quick $fl --path gda-inline --path gda-pointer --path gda-dc \
		--path gda-dc-full --order all --metric all --json $O/lat-$p.json > $O/lat-$p.log 2>&1
	echo "lat $p rc=$?"; grep -E "made again|not available|rror" $O/lat-$p.log | sort | uniq -c | head -4 | cut -c1-170
done
python3 - $O <<'PY'
import json, sys, os
o = sys.argv[1]; runs = {}
for p in ("softnic-gpu", "softnic-cpu", "mlx5"):
    d = json.load(open("%s/lat-%s.json" % (o, p))); runs[p] = {}
    bad = [r["name"] + "/" + r["metric"] for r in d["results"] if not r["validated"]]
    print(p, len(d["results"]), "rows, not validated:", bad[:8])
    for r in d["results"]:
        runs[p].setdefault((r["name"], r["metric"]), r["p50"])
for k in sorted(runs["mlx5"]):
    if "floor" in k[0] or k[1] == "rtt" and "dc" not in k[0]: continue
    print("  %-34s %-15s %s" % (k[0][:34], k[1], " ".join("%9.3f" % runs[p][k] if k in runs[p] else "        -" for p in runs)))
PY
cd $OUT && tar czf r.tgz r && rm -rf r
