# Sums ncu's per-instruction warp-state samples (t3/sass.csv, --page source
# --print-source sass) by stall reason, and lists the hottest instructions.
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = rows[1]
ix = {h: i for i, h in enumerate(hdr)}
st = [h for h in hdr if h.startswith('stall_') and 'Not Issued' not in h]
tot = {h: 0 for h in st}
ins = []
execd = 0
for r in rows[2:]:
    if len(r) != len(hdr):
        continue
    def num(h):
        try: return int(r[ix[h]].replace(',', '') or 0)
        except ValueError: return 0
    for h in st:
        tot[h] += num(h)
    n = num('# Samples'); e = num('Instructions Executed'); execd += e
    ins.append((n, e, r[ix['Address']], r[ix['Source']], {h: num(h) for h in st if num(h)}))
S = sum(tot.values())
print('samples', S, 'warp instructions executed', execd)
for h, v in sorted(tot.items(), key=lambda x: -x[1]):
    if v: print('  %-24s %6d  %5.1f%%' % (h, v, 100.0 * v / S))
print('hottest instructions (samples, executed, address, sass, reasons):')
for n, e, a, s, d in sorted(ins, key=lambda x: -x[0])[:int(sys.argv[2]) if len(sys.argv) > 2 else 40]:
    print('  %5d %7d %s %-60s %s' % (n, e, a, s[:60], ' '.join('%s=%d' % (k[6:], v) for k, v in sorted(d.items(), key=lambda x: -x[1])[:3])))
