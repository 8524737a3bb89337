#!/bin/bash
# Device call (ninth session): gic kernel with each caller's work sized to
# the paper's time (fma 2100 us at 8 live values, stream 2600 us at 16),
# the engine sharing the SMs and on 16 SMs of its own; 8 B and 7 KiB.
# devbin2/new.txz: this commit's build-dev (sm_90) gic.
cd "$(dirname "$0")/../.." || exit 1
mkdir -p devbin2/x && tar xJf devbin2/new.txz -C devbin2/x
export CUDA_MODULE_LOADING=EAGER
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
g=devbin2/x/n/bench/gic/gic
mkdir -p $OUT/logs
for p in shared g16; do
	f=""; [ $p = g16 ] && f="--engine-sms 16"
	for cl in "fma 8" "stream 16"; do set -- $cl
		for sz in 8 7168; do
			n=$1-$2-$sz-$p
			timeout 200 $g kernel --caller $1 --live $2 --size $sz --msgs 1,4,16 $f \
				--json $OUT/logs/$n.json > $OUT/logs/$n.log 2>&1; echo "$n rc $?"
		done
	done
done
python3 - $OUT/logs <<'PY'
import json, glob, os, sys
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    d = json.load(open(f)); tag = os.path.basename(f)[:-5]
    rows = {}
    for r in d["results"]:
        rows.setdefault(r["name"], {})[r["metric"]] = (r["p50"] if "p50" in r else r.get("value"), r.get("validated"), r.get("params", ""))
    for name, m in rows.items():
        t = m.get("time", (None,))[0]
        it = [x for x in m.get("time", (0, 0, ""))[2].split() if x.startswith("iters=")]
        print("%-22s %-30s time %8.1f loss %6s wait %6s regs %s blk %s valid %s %s" % (tag, name, t or 0,
              "%.1f" % m["loss"][0] if "loss" in m else "-", "%.1f" % m["waiting loss"][0] if "waiting loss" in m else "-",
              m.get("registers", ("-",))[0], m.get("blocks/SM", ("-",))[0], all(v[1] for v in m.values()), " ".join(it)))
PY
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $OUT/logs
