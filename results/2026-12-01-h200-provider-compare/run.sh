#!/bin/bash
# Device run 3 (eighth session): the GPU experiments through the mlx5
# provider on the emulated device (issue 14) beside softnic, and the
# dormant-code rows after the lean reservation (issue 16 item 1).
cd "$(dirname "$0")" && mkdir -p x && tar xJf devbin.txz -C x && cd ..
export CUDA_MODULE_LOADING=EAGER
B=$PWD/devbin/x/b G=$PWD/devbin/x/b/bench/gic/gic O=$OUT/r; mkdir -p $O
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
sm() { timeout $1 "${@:2}"; echo "  rc=$?"; }
echo "== smoke: lat through the mlx5 provider on the emulated device"
sm 120 $B/gic-emu $G lat --provider mlx5 --path gda-inline --order fence-gpu -n 200 \
	> $O/smoke.log 2>&1; grep -E "^gic:|gda-inline|rror|FAIL" $O/smoke.log | cut -c1-150 | head -8
for p in softnic-gpu softnic-cpu mlx5; do
	case $p in softnic-gpu) pre=""; fl="";; softnic-cpu) pre=""; fl="--engine cpu";;
	mlx5) pre="$B/gic-emu"; fl="--provider mlx5";; esac
	echo "== suite --quick ($p)"
	( time timeout 170 $pre $G suite --quick $fl --only lat,kernel --no-plots \
		--out $O/suite-$p --json $O/suite-$p.json > $O/suite-$p.log 2>&1; echo "  rc=$?" ) 2>&1 | grep -E "rc=|real"
	grep -E "FAIL|rror|runs on softnic only" $O/suite-$p.log | sort | uniq | head -6 | cut -c1-160
done
python3 - $O <<'PY'
import json, sys, os
o = sys.argv[1]; runs = {}
for p in ("softnic-gpu", "softnic-cpu", "mlx5"):
    f = "%s/suite-%s.json" % (o, p)
    if os.path.exists(f):
        d = json.load(open(f)); runs[p] = {}
        print(p, "|", d["run"]["nic"][:90], "|", len(d["results"]), "rows,", sum(1 for r in d["results"] if not r["validated"]), "not validated")
        for r in d["results"]:
            runs[p].setdefault((r["experiment"], r["name"], r["metric"]), r["p50"])
side = ("issue", "registers", "spill", "blocks/SM")
keys = [k for k in runs.get("mlx5", {}) if k[2] in side]
print("GPU-side rows: %d in the mlx5 run" % len(keys))
for k in sorted(keys)[:60]:
    v = [runs[p].get(k) for p in ("softnic-gpu", "softnic-cpu", "mlx5")]
    print("  %-8s %-44s %-10s %s" % (k[0], k[1][:44], k[2], " ".join("%9.3f" % x if x is not None else "        -" for x in v)))
PY
echo "== dormant rows (softnic GPU engine)"
OUT=$O/dormant GIC_GPU_BIN=$PWD/devbin/x/b timeout 300 bash scripts/dormant-check.sh 2>&1 | tail -14 | cut -c1-170
cd $OUT && tar czf r.tgz r && rm -rf r
