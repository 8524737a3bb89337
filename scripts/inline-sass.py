#!/usr/bin/env python3
"""inline-sass.py SASS_FILE: the timed issue span of `gic lat`'s mini-gda
kernels (bench/gic/gpu_lat.cu), from `cuobjdump -sass` output.

For each gda_lat_kernel<order 1 (fence-gpu), kind, LEN> it prints the
instructions of the span's fast path (from clock64 to clock64, through the
reservation's room-available branch, falling through the error checks),
and in them: loads, stores, fences, branches back (loops: the staged
builder's per-segment loop; its body is counted once and shown). Kinds:
0 the 8-byte u64 builder, 1 staged (payload loaded from GPU memory),
3 registers (gic_wqe_write_inline_regs) with LEN bytes.
"""
import re
import sys

FN = re.compile(r"Function : (_Z14gda_lat_kernelILi(\d)ELi(\d)ELi(\d+)E\S*)")
INS = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;?\s*/\* 0x[0-9a-f]+ \*/\s*$")


def functions(path):
    cur, out = None, {}
    for line in open(path):
        m = FN.search(line)
        if m:
            cur = (int(m.group(2)), int(m.group(3)), int(m.group(4)))
            out[cur] = []
            continue
        m = INS.match(line)
        if m and cur is not None:
            out[cur].append((int(m.group(1), 16), m.group(2).rstrip(" ;")))
    return out


def span(ins):
    clocks = [i for i, (_, t) in enumerate(ins) if "SR_CLOCKLO" in t]
    if len(clocks) < 2:
        return None
    c0, c1 = clocks[0], clocks[1]
    at = {a: i for i, (a, _) in enumerate(ins)}
    end = ins[c1][0]
    path, i, taken, loops, seen = [], c0 + 1, False, [], set()
    while i < len(ins) and i != c1:
        a, t = ins[i]
        if i in seen:
            break
        seen.add(i)
        path.append((a, t))
        m = re.match(r"(@!?U?P\d+ )?BRA (?:\S+ )?0x([0-9a-f]+)", t)
        if m:
            tgt = int(m.group(2), 16)
            if tgt <= a:        # a loop: count its body once
                loops.append((tgt, a))
                i += 1
                continue
            if not m.group(1):  # unconditional
                i = at[tgt]
                continue
            if not taken and tgt != end:  # the room check: room available
                taken = True
                i = at[tgt]
                continue
        i += 1
    return path, loops


def kind(t):
    op = t.split()[0] if not t.startswith("@") else t.split()[1]
    if op.startswith(("LDG", "LD.", "LDL", "LDS", "LD ")) or op == "LD":
        return "load"
    if op.startswith(("STG", "ST.", "STL", "STS")) or op == "ST":
        return "store"
    if op.startswith(("MEMBAR", "FENCE", "ERRBAR", "CGAERRBAR", "CCTL")):
        return "fence"
    return "other"


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    fns = functions(argv[1])
    verbose = bool(__import__("os").environ.get("VERBOSE"))
    print("%-6s %-9s %5s %6s %6s %7s %6s %s" % ("kind", "payload", "LEN", "instr", "loads",
                                                 "stores", "fences", "loops"))
    for (o, k, n) in sorted(fns, key=lambda x: (x[1], x[2])):
        if o != 1 or k not in (0, 1, 3):
            continue
        r = span(fns[(o, k, n)])
        if not r:
            continue
        path, loops = r
        c = {"load": 0, "store": 0, "fence": 0, "other": 0}
        for _, t in path:
            c[kind(t)] += 1
        name = {0: "u64", 1: "staged", 3: "registers"}[k]
        print("%-6d %-9s %5s %6d %6d %7d %6d %s" % (k, name, n or "-", len(path), c["load"],
                                                     c["store"], c["fence"],
                                                     " ".join("%x-%x" % l for l in loops)))
        if verbose:
            for a, t in path:
                print("    %05x %s" % (a, t))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
