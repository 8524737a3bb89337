#!/usr/bin/env python3
"""bench/gic/test_flags_cli.py GIC: every subcommand's --help against its
parser. For each flag `gic SUB --help` lists (its own and the common ones):
without a value it is refused as needing one (so the parser knows it), and
a value outside the range or the names the help gives is refused naming
the flag; a flag the help does not list is refused as unknown; no help line
of a flag is wider than 80 columns. Every refusal must exit with status 2 before
anything runs (each command carries --host --procs 2, which the driver
would refuse after parsing, naming --procs). Exit status 0 when all hold,
1 (after saying which did not) when not."""
import re
import subprocess
import sys

GUARD = ["--host", "--procs", "2"]
COL = 17  # where help text starts (flags.c)


def run(gic, args):
    p = subprocess.run([gic] + args, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr


def subcommands(gic):
    _, out = run(gic, ["--help"])
    sec = out.split("subcommands:\n", 1)[1].split("\n\n", 1)[0]
    return [line.split()[0] for line in sec.splitlines() if line.strip()]


def entries(help_text):
    """(names, value form, text) per flag of --help, text joined to one line."""
    out = []
    for line in help_text.splitlines():
        if line.startswith("  -") or line.startswith("  ("):
            head, text = line[2:COL].rstrip(), line[COL:]
            if len(line) > COL and line[COL - 1] != " ":  # the head fills its column
                head, text = line[2:], ""
            out.append([head, text.strip()])
        elif line.startswith(" " * COL) and out:
            out[-1][1] = (out[-1][1] + " " + line.strip()).strip()
    result = []
    for head, text in out:
        parts = [p.strip() for p in head.split(",")]
        names, value = [], None
        for p in parts:
            w = p.split()
            for n in w[0].split("/"):
                if re.fullmatch(r"--?[A-Za-z][\w-]*", n):
                    names.append(n)
            if len(w) > 1:
                value = w[1]
        result.append((names, value, text))
    return result


def size(t):
    m = re.fullmatch(r"(\d+)([KMG]?)", t)
    return int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]


def bad_values(text):
    """Values the help's range or names rule out, or [] when it gives none."""
    m = re.match(r"up to (\d+) of (-?\d+)\.\.(\d+), comma-separated", text)
    if m:
        n, lo, hi = int(m.group(1)), int(m.group(2)), int(m.group(3))
        return [str(hi + 1), str(lo - 1), ",".join([str(lo)] * (n + 1))]
    m = re.match(r"(-?\d+[KMG]?)\.\.(\d+[KMG]?)( bytes)?", text)
    if m:
        lo, hi = size(m.group(1).lstrip("-")), size(m.group(2))
        return [str(hi + 1), str(lo - 1), "x"]
    m = re.match(r"> (-?\d+), <= (\d+)", text)
    if m:
        return [m.group(1), str(int(m.group(2)) + 1), "x"]
    if re.match(r"[\w.+-]+( \| [\w.+-]+)+( \(|:|$)", text):
        return ["no-such-value"]
    return []


def check_sub(gic, sub, bad):
    """Checks sub's --help entries; (entries, commands run)."""
    runs = 1
    rc, out = run(gic, [sub, "--help"])
    if rc != 0:
        bad.append("%s --help: exit status %d" % (sub, rc))
    for line in out.splitlines():
        if line.startswith("  ") and len(line) > 80:
            bad.append("%s --help: a line of %d columns: %r" % (sub, len(line), line))
    flags = entries(out)
    if not flags:
        bad.append("%s --help: no flags" % sub)
    for names, value, text in flags:
        for name in names:
            if value is None:
                continue
            rc, err = run(gic, [sub] + GUARD + [name])
            runs += 1
            if rc != 2 or "%s needs a value" % name not in err:
                bad.append("%s %s (no value): exit status %d: %s" % (sub, name, rc, err.strip()))
        for v in bad_values(text):
            rc, err = run(gic, [sub] + GUARD + [names[0], v])
            runs += 1
            if rc != 2 or "%s: expected" % names[0] not in err:
                bad.append("%s %s %s: exit status %d: %s" % (sub, names[0], v, rc, err.strip()))
    rc, err = run(gic, [sub] + GUARD + ["--no-such-flag"])
    if rc != 2 or "unknown flag '--no-such-flag'" not in err:
        bad.append("%s --no-such-flag: exit status %d: %s" % (sub, rc, err.strip()))
    return len(flags), runs + 1


def main():
    gic = sys.argv[1]
    bad = []
    subs = subcommands(gic)
    counts = [check_sub(gic, s, bad) for s in subs]
    for b in bad:
        print("FAIL", b)
    print("test_flags_cli.py: %d subcommands, %d help entries, %d commands, %d failures"
          % (len(subs), sum(c[0] for c in counts), sum(c[1] for c in counts), len(bad)))
    return 1 if bad or not subs else 0


if __name__ == "__main__":
    sys.exit(main())
