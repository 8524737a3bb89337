# Joins ncu's per-instruction counts (sass.csv) with the line table of the
# same kernel (nvdisasm -g -c of the -lineinfo object): warp instructions
# executed and warp-state samples per source function, per batch.
# usage: by_line.py SASS_CSV NVDISASM_G_OUT SOURCE BATCHES
import csv, re, sys, gzip, collections
op = gzip.open if sys.argv[1].endswith('.gz') else open
rows = list(csv.reader(op(sys.argv[1], 'rt')))
hdr = rows[1]; ix = {h: i for i, h in enumerate(hdr)}
data = [r for r in rows[2:] if len(r) == len(hdr)]
base = int(data[0][ix['Address']], 16)
line_at = {}
cur = None
infn = False
for l in open(sys.argv[2]):
    if '.text._Z21snx_gpu_engine_kernel' in l and l.startswith('//---'):
        infn = True; continue
    if infn and l.startswith('//---'):
        break
    if not infn: continue
    m = re.search(r'//## File "([^"]+)", line (\d+)', l)
    if m:
        cur = (m.group(1).split('/')[-1], int(m.group(2))); continue
    m = re.match(r'\s*/\*([0-9a-f]{4,})\*/', l)
    if m and cur:
        line_at[int(m.group(1), 16)] = cur
src = open(sys.argv[3]).read().split('\n')
# the function each line of engine_gpu.cu lies in
fn_of = {}
name = '?'
for i, l in enumerate(src, 1):
    m = re.match(r'(?:static |__global__ ).*?(\w+)\(', l)
    if m and not l.startswith('\t'):
        name = m.group(1)
    fn_of[i] = name
B = float(sys.argv[4])
per = collections.Counter(); smp = collections.Counter()
for r in data:
    off = int(r[ix['Address']], 16) - base
    f, ln = line_at.get(off, ('?', 0))
    key = fn_of.get(ln, '?') if f == 'engine_gpu.cu' else f + ':' + str(ln)
    per[key] += int(r[ix['Instructions Executed']].replace(',', '') or 0)
    smp[key] += int(r[ix['# Samples']].replace(',', '') or 0)
S = sum(smp.values())
print('%-34s %10s %8s' % ('function (or header:line)', 'inst/batch', 'samples%'))
for k, v in sorted(per.items(), key=lambda x: -x[1])[:30]:
    print('%-34s %10.1f %8.1f' % (k, v / B, 100.0 * smp[k] / S))
