#!/usr/bin/env python3
"""The paper's figures from `gic` results: report-plots.py [options] INPUT... DIR

Reads one or more `gic` result files (INPUT: the JSON of --json or of a
`gic suite` run, whose aggregate rows are used for a --repeat run, or the
CSV of --csv) and writes into DIR one PNG per figure of the paper that the
rows can make, named after the figure it reproduces (fig3a-inline-latency.png,
table5-rate.png, ...). Each figure has the paper's axes, our p50 with p99 as
error bars (and the runs' spread for a --repeat run), the paper's points from
scripts/paper-figures.csv overlaid, and a footer naming the GPU, the SM
clock, the provider and engine, and the input files. A figure the rows
cannot make is listed with the rows it needs; nothing is dropped silently.

Used by `gic suite` as `report-plots.py DIR/results.json DIR`: when
DIR/report.md exists, the figures and the list of those not drawn are
appended to it.

Options:
  --only LIST            comma-separated figure ids (fig3a,table5,...); default all
  --paper CSV            the paper's points (default scripts/paper-figures.csv)
  --require-matplotlib   exit 1 when matplotlib is missing (default: print a
                         skip message and exit 0, as `gic suite` expects)
  --list                 print the figure ids and file names, then exit

Exit status: 0 done (figures that could not be made are listed), 1 matplotlib
missing with --require-matplotlib, 2 bad usage or bad input (the message
names the file and the row).
"""
import csv
import json
import os
import re
import sys
import textwrap

PROG = "report-plots.py"
HERE = os.path.dirname(os.path.abspath(__file__))
PAPER_CSV = os.path.join(HERE, "paper-figures.csv")


class InputError(Exception):
    """Bad input: the message names the file and the row."""


class Missing(Exception):
    """The rows cannot make a figure: the message says which rows it needs."""


# ---------------------------------------------------------------- input rows

RUN_FIELDS = ("gpu", "sm_mhz", "provider", "engine")
RESULT_FIELDS = ("experiment", "name", "metric", "unit", "params", "transport", "p50", "p99",
                 "validated", "note")
AGGREGATE_FIELDS = ("experiment", "name", "metric", "unit", "params", "transport", "p50",
                    "p50_min", "p50_max", "p99", "runs", "validated", "note")
CSV_FIELDS = ("experiment", "name", "metric", "unit", "params", "transport", "p50", "p99",
              "validated", "note", "gpu", "sm_mhz", "engine", "commit")
NUMBER_FIELDS = ("p50", "p99", "p50_min", "p50_max")


class Run:
    """Where rows come from: one input file and its run information."""

    def __init__(self, path, gpu, sm_mhz, provider, engine, commit, date):
        self.path, self.gpu, self.sm_mhz = path, gpu, sm_mhz
        self.provider, self.engine, self.commit, self.date = provider, engine, commit, date
        # A short name for notes: the file and its folder (results.json alone says little).
        self.stem = os.path.join(os.path.basename(os.path.dirname(os.path.abspath(path))),
                                 os.path.basename(path))


class Row:
    """One measured row: p50, p99, and the runs' spread of p50 (aggregate rows)."""

    def __init__(self, run, where, d, aggregate):
        self.run, self.where = run, where
        self.experiment, self.name, self.metric = d["experiment"], d["name"], d["metric"]
        self.unit, self.params_text, self.transport = d["unit"], d["params"], d["transport"]
        self.note, self.validated = d["note"], d["validated"]
        self.p50, self.p99 = d["p50"], d["p99"]
        self.spread = (d["p50_min"], d["p50_max"]) if aggregate else None
        self.runs = d.get("runs") if aggregate else None
        self.paper = d.get("paper")
        self.params = parse_params(d["params"])

    def param(self, key, default=None):
        return self.params.get(key, default)

    def int_param(self, key):
        try:
            return int(self.params[key])
        except (KeyError, ValueError):
            raise InputError("%s: %s: params lack an integer %s= (params '%s')"
                             % (self.run.path, self.where, key, self.params_text))

    def sm_mhz(self):
        """(MHz, 'row') when the row records its SM clock, else (MHz, 'run')."""
        v = self.params.get("sm_mhz")
        try:
            return float(v), "row"
        except (TypeError, ValueError):
            return self.run.sm_mhz, "run"

    def low_high(self):
        vals = [self.p50, self.p99] + (list(self.spread) if self.spread else [])
        return min(vals), max(vals)


def parse_params(text):
    out = {}
    for tok in text.split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            out[k] = v
    return out


def row_label(d, i, key):
    bits = ["%s[%d]" % (key, i)]
    if isinstance(d, dict) and isinstance(d.get("name"), str):
        bits.append("(%s '%s', %s)" % (d.get("experiment", "?"), d["name"], d.get("metric", "?")))
    return " ".join(bits)


def check_fields(path, where, d, fields):
    if not isinstance(d, dict):
        raise InputError("%s: %s: not an object" % (path, where))
    for f in fields:
        if f not in d:
            raise InputError("%s: %s: missing field '%s'" % (path, where, f))
    for f in NUMBER_FIELDS:
        if f in fields and (isinstance(d[f], bool) or not isinstance(d[f], (int, float))):
            raise InputError("%s: %s: field '%s' is not a number: %r" % (path, where, f, d[f]))
    for f in ("experiment", "name", "metric", "unit", "params", "transport", "note"):
        if f in fields and not isinstance(d[f], str):
            raise InputError("%s: %s: field '%s' is not a string: %r" % (path, where, f, d[f]))
    if "validated" in fields and not isinstance(d["validated"], bool):
        raise InputError("%s: %s: field 'validated' is not true or false: %r"
                         % (path, where, d["validated"]))


def load_json(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except OSError as e:
        raise InputError("%s: cannot read: %s" % (path, e.strerror))
    except json.JSONDecodeError as e:
        raise InputError("%s: not valid JSON: line %d column %d: %s"
                         % (path, e.lineno, e.colno, e.msg))
    if not isinstance(doc, dict):
        raise InputError("%s: not a gic result (the top level is not an object)" % path)
    for key in ("run", "results"):
        if key not in doc:
            raise InputError("%s: not a gic result: missing '%s'" % (path, key))
    info = doc["run"]
    check_fields(path, "run", info, RUN_FIELDS)
    if not isinstance(info["sm_mhz"], (int, float)):
        raise InputError("%s: run: field 'sm_mhz' is not a number: %r" % (path, info["sm_mhz"]))
    run = Run(path, str(info["gpu"]), float(info["sm_mhz"]), str(info["provider"]),
              str(info["engine"]), str(info.get("commit", "?")), str(info.get("date", "?")))
    # A --repeat run: its aggregate rows (the median of the runs' p50s).
    aggregate = doc.get("aggregate") is not None
    key = "aggregate" if aggregate else "results"
    items = doc[key]
    if not isinstance(items, list):
        raise InputError("%s: '%s' is not a list" % (path, key))
    rows = []
    for i, d in enumerate(items):
        where = row_label(d, i, key)
        check_fields(path, where, d, AGGREGATE_FIELDS if aggregate else RESULT_FIELDS)
        rows.append(Row(run, where, d, aggregate))
    return rows


def load_csv(path):
    """The CSV of `gic --csv`: the run information is repeated on every row."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            header = reader.fieldnames or []
            for c in CSV_FIELDS:
                if c not in header:
                    raise InputError("%s: not a gic CSV: the header lacks column '%s'" % (path, c))
            lines = list(reader)
    except OSError as e:
        raise InputError("%s: cannot read: %s" % (path, e.strerror))
    except csv.Error as e:
        raise InputError("%s: not valid CSV: %s" % (path, e))
    rows, runs = [], {}
    for i, line in enumerate(lines):
        where = "line %d (%s '%s', %s)" % (i + 2, line.get("experiment"), line.get("name"),
                                           line.get("metric"))
        if None in line.values() or None in line:
            raise InputError("%s: %s: wrong number of columns" % (path, where))
        d = dict(line)
        for f in ("p50", "p99", "sm_mhz"):
            try:
                d[f] = float(line[f])
            except ValueError:
                raise InputError("%s: %s: column '%s' is not a number: %r"
                                 % (path, where, f, line[f]))
        d["validated"] = line["validated"].strip() in ("1", "true")
        paper = line.get("paper", "")
        d["paper"] = float(paper) if paper not in ("", None) else None
        key = (line["gpu"], d["sm_mhz"], line["engine"], line["commit"])
        if key not in runs:
            # The CSV has no provider column: softnic's transports name it.
            provider = "softnic" if line["transport"].startswith("softnic") else "unknown"
            runs[key] = Run(path, line["gpu"], d["sm_mhz"], provider, line["engine"],
                            line["commit"], "?")
        rows.append(Row(runs[key], where, d, False))
    return rows


def load_inputs(paths):
    rows = []
    for p in paths:
        rows += load_csv(p) if p.lower().endswith(".csv") else load_json(p)
    return rows


# ---------------------------------------------------------------- the paper's points

# The columns each kind of item needs: a point or a star (x, y), a horizontal
# or vertical line, a shaded range or a straight segment (x..x2, y..y2), a
# bar figure's value (y) for the category named in x.
PAPER_NEEDS = {"point": ("x", "y"), "star": ("x", "y"), "hline": ("y",), "vline": ("x",),
               "range": ("x", "y", "x2", "y2"), "segment": ("x", "y", "x2", "y2"), "bar": ("y",)}
PAPER_KINDS = tuple(PAPER_NEEDS)
PAPER_COLUMNS = ("figure", "panel", "series", "kind", "x", "y", "x2", "y2", "paper_ref",
                 "platform", "source")


class PaperItem:
    def __init__(self, d, where):
        self.figure, self.panel, self.series = d["figure"], d["panel"], d["series"]
        self.kind, self.ref, self.platform = d["kind"], d["paper_ref"], d["platform"]
        self.source, self.where = d["source"], where
        self.key = d["x"] if self.kind == "bar" else None
        self.x = self.y = self.x2 = self.y2 = None
        for col in PAPER_NEEDS[self.kind]:
            try:
                setattr(self, col, float(d[col]))
            except ValueError:
                raise InputError("%s: column '%s' is not a number: %r (kind %s)"
                                 % (where, col, d[col], self.kind))
        if self.kind == "bar" and not self.key:
            raise InputError("%s: a bar needs its category in column 'x'" % where)


def load_paper(path):
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            for c in PAPER_COLUMNS:
                if c not in (reader.fieldnames or []):
                    raise InputError("%s: the header lacks column '%s'" % (path, c))
            lines = list(reader)
    except OSError as e:
        raise InputError("%s: cannot read: %s" % (path, e.strerror))
    items = []
    known = {f.id for f in FIGURES}
    for i, d in enumerate(lines):
        where = "%s: line %d" % (path, i + 2)
        if None in d.values() or None in d:
            raise InputError("%s: wrong number of columns" % where)
        if d["kind"] not in PAPER_KINDS:
            raise InputError("%s: kind '%s' is not one of %s"
                             % (where, d["kind"], ", ".join(PAPER_KINDS)))
        if d["figure"] not in known:
            raise InputError("%s: figure '%s' is not one of %s"
                             % (where, d["figure"], ", ".join(sorted(known))))
        items.append(PaperItem(d, where))
    return items


# ---------------------------------------------------------------- series

class Series:
    """Measured points of one curve (xy) or one bar set (bars: x is a category key)."""

    def __init__(self, label, style=None, nic_side=False):
        self.label, self.style, self.nic_side = label, style or {}, nic_side
        self.points = []  # (x, row)
        self.stars = []   # x values to mark with a star
        self.annotate = None  # text at the last point

    def add(self, x, row):
        self.points.append((x, row))

    def sorted(self):
        return sorted(self.points, key=lambda p: p[0])


class Collected:
    """What a figure's collector found: series per panel and notes for the reader."""

    def __init__(self):
        self.panels = {}  # panel name -> [Series]
        self.categories = {}  # panel name -> [(key, tick label)] for bar figures
        self.notes = []
        self.title_extra = {}
        self.dropped = []  # (kept, dropped): rows of one point found in several inputs

    def series(self, panel, label, **kw):
        for s in self.panels.setdefault(panel, []):
            if s.label == label:
                return s
        s = Series(label, **kw)
        self.panels[panel].append(s)
        return s

    def rows(self):
        return [r for ss in self.panels.values() for s in ss for _, r in s.points]


class Ctx:
    """The input rows, selected by experiment, metric and name pattern."""

    def __init__(self, rows):
        self.rows = rows
        self.skipped = []

    def match(self, experiment, metrics, pattern):
        if isinstance(metrics, str):
            metrics = (metrics,)
        rx = re.compile(pattern)
        out = []
        for r in self.rows:
            if r.experiment != experiment or r.metric not in metrics:
                continue
            m = rx.match(r.name)
            if not m:
                continue
            if not r.validated:
                if r not in self.skipped:
                    self.skipped.append(r)
                continue
            out.append((r, m))
        return out


def dedupe(c):
    """One row per point: where inputs overlap, the newest run's (the dropped are noted)."""
    for ss in c.panels.values():
        for s in ss:
            by_x = {}
            for x, r in s.points:
                by_x.setdefault(x, []).append(r)
            s.points = []
            for x, rs in by_x.items():
                keep = newest(rs)
                s.points.append((x, keep))
                c.dropped += [(keep, r) for r in rs if r is not keep]
    if c.dropped:
        def count(rows):
            n = {}
            for r in rows:
                n[r.run.stem] = n.get(r.run.stem, 0) + 1
            return ", ".join("%s x%d" % kv for kv in sorted(n.items()))
        c.notes.append("%d point(s) had rows in more than one input: drawn the newest run's "
                       "(%s), not the older (%s)" % (len(c.dropped), count(k for k, _ in c.dropped),
                                                    count(d for _, d in c.dropped)))


def newest(rows):
    """The row of the newest run among duplicates (by the run's date, then file order)."""
    return max(rows, key=lambda r: (r.run.date, rows.index(r)))


# ---------------------------------------------------------------- collectors, one per figure

PAYLOAD_NOTE = {"registers": "payload in registers", "memory": "payload loaded from GPU memory"}


def collect_fig3a(ctx, paper):
    c = Collected()
    sweep = ctx.match("lat", "issue", r"^(gda-inline(?:-staged)?) (\S+) size=(\d+)( floor)?$")
    if not sweep:
        raise Missing("no `gic lat --sweep` rows (experiment lat, metric issue, "
                      "name 'gda-inline ORDER size=N')")
    orders = set()
    for r, m in sweep:
        path, order, size, floor = m.groups()
        orders.add(order)
        if floor:
            label, style = "%s %s floor: same stores and fences, no queue logic" % (path, order), \
                {"color": "0.6", "linestyle": ":", "marker": "."}
        else:
            label = "%s %s (%s)" % (path, order, PAYLOAD_NOTE.get(r.param("payload"),
                                                                  "payload " + str(r.param("payload"))))
            style = {"linestyle": "--"} if path.endswith("staged") else {}
        c.series("issue", label, style=style).add(int(size), r)
    for r, m in ctx.match("lat", "issue", r"^gda-pointer (\S+)$"):
        if m.group(1) in orders:
            c.series("issue", "gda-pointer %s (pointer payload)" % m.group(1),
                     style={"linestyle": "none", "marker": "s"}).add(r.int_param("size"), r)
    # gda-pointer's size rows are Figure 11's (pointer writes up to 1 MiB).
    putc = ctx.match("lat", "put+completion", r"^(gda-inline(?:-staged)?) (\S+) size=(\d+)$")
    for r, m in putc:
        c.series("put+completion", "%s %s" % m.group(1, 2), nic_side=True).add(int(m.group(3)), r)
    if not putc:
        c.notes.append("put+completion against inline size: no rows (lat, put+completion, "
                       "'gda-inline ORDER size=N'); only the 8 B rows are drawn")
    for r, m in ctx.match("lat", "put+completion", r"^(gda-inline|gda-pointer) (\S+)$"):
        if m.group(2) in orders:
            c.series("put+completion", "%s %s, 8 B row" % m.group(1, 2), nic_side=True,
                     style={"linestyle": "none", "marker": "s" if "pointer" in m.group(1) else "o"}
                     ).add(r.int_param("size"), r)
    return c


def collect_fig3b(ctx, paper):
    c = Collected()
    rows = ctx.match("rate", ("message rate", "message rate with drain"),
                     r"^fig3b-(?:q1-)?(inline-staged|inline|pointer)-(\d+)$")
    if not rows:
        raise Missing("no `gic rate --row fig3b` rows (experiment rate, name 'fig3b-inline-N', "
                      "'fig3b-pointer-N', 'fig3b-q1-...')")
    qps = set()
    for r, m in rows:
        qps.add(r.param("qps"))
        drain = r.metric.endswith("drain")
        label = "%s, %s thr / %s QP / batch %s: %s" % (
            m.group(1), r.param("threads"), r.param("qps"), r.param("batch"),
            "to the last CQE" if drain else "GPU side, to the last doorbell")
        marker = {"pointer": "s", "inline": "o"}.get(m.group(1), "v")
        c.series("", label, nic_side=drain,
                 style={"linestyle": "--" if drain else "-", "marker": marker}
                 ).add(int(m.group(2)), r)
    for r, m in ctx.match("rate", "message rate", r"^(t16-q16-s16-b16)(-wrap)?$"):
        label = "%s (16 QPs, batch 16): %s" % (m.group(1), "to the last CQE, rings wrapping"
                                              if m.group(2) else "GPU side")
        c.series("", label, nic_side=bool(m.group(2)),
                 style={"linestyle": "none", "marker": "^"}).add(r.int_param("size"), r)
    if "16" not in qps:
        c.notes.append("our fig3b rows run qps=%s (the paper's Figure 3b: 16 QPs); the 16-QP "
                       "points at 8 B are Table 5's row t16-q16-s16-b16" % ",".join(sorted(qps)))
    return c


SCOPE_LABEL = {"qp": "scope=qp: the used QP's CQ (DeepEP's port)",
               "all": "scope=all: every QP's CQ polled (all-QP quiet)",
               "all-progress": "scope=all-progress: every QP's positions read (NVSHMEM 3.8's walk)"}


def collect_fig4(ctx, paper):
    c = Collected()
    rows = ctx.match("lat", "put+completion", r"^(gda-inline|gda-pointer) (\S+) qps=(\d+) scope=(\S+)$")
    if len({m.group(3) for _, m in rows}) < 2:
        raise Missing("needs `gic lat --qps N --scope S` put+completion rows at two or more QP "
                      "counts (name 'gda-inline ORDER qps=N scope=S'); found %d row(s)" % len(rows))
    for r, m in rows:
        c.series("", "%s %s, %s" % (m.group(1), m.group(2), SCOPE_LABEL.get(m.group(4), m.group(4))),
                 nic_side=True).add(int(m.group(3)), r)
    for r, m in ctx.match("lat", "rtt", r"^(gda-inline|gda-pointer) (\S+) qps=(\d+)$"):
        c.series("", "%s %s, rtt (polled-word control)" % m.group(1, 2), nic_side=True,
                 style={"linestyle": "-.", "marker": "x"}).add(int(m.group(3)), r)
    return c


def collect_fig5(ctx, paper):
    c = Collected()
    groups = {}
    for r in ctx.rows:
        if r.experiment == "lat" and r.metric in ("issue", "put+completion") and r.validated:
            groups.setdefault((r.name, r.metric, r.transport), []).append(r)
    clocks = {round(r.sm_mhz()[0]) for rs in groups.values() for r in rs}
    found = False
    for (name, metric, transport), rs in sorted(groups.items()):
        by_clock = {}
        for r in rs:
            by_clock.setdefault(round(r.sm_mhz()[0]), r)
        if len(by_clock) < 2 or max(by_clock) - min(by_clock) < 50:
            continue
        found = True
        s = c.series("", "%s, %s" % (name, metric), nic_side=metric != "issue")
        for mhz, r in by_clock.items():
            s.add(1.0 / mhz, r)
        xs = [x for x, _ in s.points]
        ys = [r.p50 for _, r in s.points]
        n, mx, my = len(xs), sum(xs) / len(xs), sum(ys) / len(ys)
        sxx = sum((x - mx) ** 2 for x in xs)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
        s.label += ": fit C = %.0f cycles, B = %.2f us" % (slope, my - slope * mx)
    if not found:
        raise Missing("needs the same lat row (issue or put+completion) at two or more SM clocks "
                      "(rows record sm_mhz); the inputs hold %s MHz only: gic records the clock "
                      "but does not lock or sweep it" % "/".join(str(k) for k in sorted(clocks)))
    return c


def collect_fig6(ctx, paper):
    c = Collected()
    rows = ctx.match("loaded", "loaded rtt", r"^(.*?)(?: bg=\d+)?$")
    if not rows:
        raise Missing("no `gic loaded` rows (experiment loaded, metric 'loaded rtt')")
    rates = {(r.run.path, r.name): r for r, _ in ctx.match("loaded", "background rate", r".")}
    for r, m in rows:
        if r.p50 <= 0:
            c.notes.append("%s: %s: p50 %g not drawn on a log axis" % (r.run.stem, r.name, r.p50))
            continue
        base = m.group(1)
        ls = "--" if "shared" in base else "-" if "reserved" in base else ":"
        s = c.series("", "%s [%s]" % (base, r.transport), nic_side=True, style={"linestyle": ls})
        # GPU rows count background CTAs (bg_ctas=), the host analogue its
        # background threads (bg=): the same axis, one level per run.
        s.add(r.int_param("bg_ctas" if "bg_ctas" in r.params else "bg"), r)
    for s in c.panels.get("", []):
        x, r = s.sorted()[-1]
        bg = rates.get((r.run.path, r.name))
        if bg is not None:
            s.annotate = "bg %.3g M msg/s" % bg.p50
    if all(len(s.points) == 1 for s in c.panels.get("", [])):
        c.notes.append("one background level per series: no sweep over background CTAs")
    if not c.panels:
        raise Missing("the loaded rtt rows have no positive p50")
    return c


def collect_fig7(ctx, paper):
    c = Collected()
    rows = ctx.match("proxy", ("message rate", "message rate cold"),
                     r"^(baseline|tuned) T(\d+)/R(\d+)/B(\d+)$")
    left = 0
    for r, m in rows:
        proto, t, rings, b = m.groups()
        if proto != "tuned" or rings != "32":
            left += 1
            continue
        label = "mini-proxy tuned R32 B%s" % b
        if r.metric.endswith("cold"):
            label += ", cold (%s ms idle)" % r.param("idle_ms", "?")
        if r.param("inflight"):
            label += ", %s chains in flight" % r.param("inflight")
        c.series("", label, nic_side=True,
                 style={"linestyle": "none" if r.metric.endswith("cold") else "-",
                        "marker": "s" if r.metric.endswith("cold") else "o"}).add(int(t), r)
    if not c.panels:
        raise Missing("no `gic proxy` rows of the tuned protocol at R=32 (experiment proxy, metric "
                      "'message rate', name 'tuned T<n>/R32/B<b>'); %d other proxy rows" % left)
    if left:
        c.notes.append("%d proxy rows of the baseline protocol or R != 32 not drawn (Figure 7: "
                       "the tuned mini-proxy, R=32)" % left)
    return c


def collect_fig8(ctx, paper):
    c = Collected()
    rows = ctx.match("payload", "goodput", r"^(.*) size=(\d+)$")
    if not rows:
        raise Missing("no `gic payload` rows (experiment payload, metric goodput, name 'PATH size=N')")
    for r, m in rows:
        c.series("", "%s [%s]" % (m.group(1), r.transport), nic_side=True).add(int(m.group(2)), r)
    for r, _ in ctx.match("payload", "first size at 90% of own max", r"."):
        for s in c.panels[""]:
            if s.label == "%s [%s]" % (r.name, r.transport) and s.points[0][1].run is r.run:
                s.stars.append(r.p50)
    c.notes.append("our stars: the first size at 90% of the path's own largest goodput "
                   "(softnic has no link rate); the paper's: 90% of 24.8 GB/s")
    return c


def kernel_key(caller, variant, msgs, blocks, live, metric):
    return "%s %s msgs=%s blocks=%s live=%s [%s]" % (caller, variant, msgs, blocks, live, metric)


def collect_fig9(ctx, paper):
    c = Collected()
    rows = ctx.match("kernel", ("loss", "waiting loss", "registers", "blocks/SM"),
                     r"^(fma|stream) (none|code|send|sendwait) msgs=(\d+) size=(\d+)$")
    if not any(r.metric == "loss" for r, _ in rows):
        raise Missing("no `gic kernel` loss rows (experiment kernel, metric loss, name "
                      "'fma|stream code|send|sendwait msgs=N size=S')")
    res = {}  # (caller, variant, msgs, blocks, live, metric) -> [rows]
    for r, m in rows:
        caller, variant, msgs, _ = m.groups()
        res.setdefault((caller, variant, int(msgs), r.param("blocks"), r.param("live"), r.metric),
                       []).append(r)
    for key, rs in res.items():
        if len(rs) > 1:
            keep = newest(rs)
            c.dropped += [(keep, r) for r in rs if r is not keep]
            res[key] = [keep]
    panels = {"fma": "a", "stream": "b"}
    for caller, panel in panels.items():
        keys = [k for k in res if k[0] == caller and k[5] in ("loss", "waiting loss")]
        if not keys:
            c.notes.append("(%s) %s caller: no rows" % (panel, caller))
            continue
        lives = sorted({k[4] for k in keys}, key=lambda v: int(v or 0))
        c.title_extra[panel] = "%s caller, %s live values" % (
            "compute (fma)" if caller == "fma" else "streaming", "/".join(lives))
        cats = []
        for blocks, live in sorted({(k[3], k[4]) for k in keys}, key=lambda b: (int(b[0] or 0),
                                                                                 int(b[1] or 0))):
            at = (blocks, live)
            for variant, metric in (("code", "loss"), ("send", "loss"), ("sendwait", "loss"),
                                    ("sendwait", "waiting loss")):
                msgs = [k[2] for k in keys if k[1] == variant and k[3:5] == at and k[5] == metric]
                if not msgs:
                    continue
                # The paper's bars: code only (no message), and 16 messages per block.
                n = 0 if variant == "code" else max(msgs)
                key = kernel_key(caller, variant, n, blocks, live, metric)
                r = res[(caller, variant, n, blocks, live, metric)][0]
                tick = "%s\n%d msgs%s%s" % (
                    "waiting loss" if metric == "waiting loss" else variant, n,
                    "" if blocks == "528" else "\n%s blocks" % blocks,
                    "" if len(lives) == 1 else "\n%s live" % live)
                regs = res.get((caller, variant, n, blocks, live, "registers"))
                occ = res.get((caller, variant, n, blocks, live, "blocks/SM"))
                if regs and occ:
                    tick += "\n%g regs, %g/SM" % (regs[0].p50, occ[0].p50)
                cats.append((key, tick))
                c.series(panel, "ours: loss vs the kernel without the send path "
                         "(waiting loss: vs send)", nic_side=True).add(key, r)
            none_regs = res.get((caller, "none", 0, blocks, live, "registers"))
            none_occ = res.get((caller, "none", 0, blocks, live, "blocks/SM"))
            if none_regs and none_occ:
                c.notes.append("(%s) %s none, %s blocks, %s live: %g regs, %g blocks/SM" % (
                    panel, caller, blocks, live, none_regs[0].p50, none_occ[0].p50))
        c.categories[panel] = cats
    return c


CONN_STYLE = {"1": ":", "32": "-", "8192": "--"}


def collect_fig10(ctx, paper):
    c = Collected()
    rows = ctx.match("conns", "message rate",
                     r"^(send-only|receive-only|simultaneous) (rc|dc), (\d+) conns, (\d+) writes/visit$")
    if not rows:
        raise Missing("no `gic conns` rows (experiment conns, metric 'message rate', name "
                      "'ROLE rc|dc, N conns, W writes/visit')")
    for r, m in rows:
        role, transport, conns, writes = m.groups()
        c.series("", "%s %s, %s writes/visit" % (role, transport, writes), nic_side=True,
                 style={"linestyle": CONN_STYLE.get(writes, "-.")}).add(int(conns), r)
    c.notes.append("(b) the 32-PE and 128-PE sweeps: not reproduced (one host)")
    return c


def collect_fig11(ctx, paper):
    """Figure 8's paths, one operation at a time: `gic lat --sweep` on gda-pointer and the
    proxy paths (pointer writes). The paper plots Figure 11 without a table: its points are
    Table 3's 8 B rows (scripts/paper-figures.csv); every series of ours is NIC-side
    (softnic)."""
    c = Collected()
    groups = {}
    rows = ctx.match("lat", "put+completion",
                     r"^(gda-pointer \S+|proxy-baseline|proxy-tuned) size=(\d+)$")
    for r, m in rows:
        groups.setdefault((m.group(1), r.transport), []).append((int(m.group(2)), r))
    for (base, transport), pts in sorted(groups.items()):
        if len({x for x, _ in pts}) > 1:
            style = {"linestyle": "--"} if base.startswith("proxy") else {}
            s = c.series("", "%s [%s]" % (base, transport), style=style, nic_side=True)
            for x, r in pts:
                s.add(x, r)
    if not c.panels:
        raise Missing("needs lat put+completion rows at two or more payload sizes of "
                      "gda-pointer or a proxy path (names 'gda-pointer ORDER size=N', "
                      "'proxy-tuned size=N'; `gic lat --sweep --path gda-pointer --path "
                      "proxy-baseline --path proxy-tuned`); %s"
                      % ("none found" if not groups else "found one size only"))
    c.notes.append("the paper gives Figure 11 as a plot only: its points here are Table 3's "
                   "8 B rows; every series is softnic's (its engine copies the payload), each "
                   "destination checked after its completion")
    return c


def bar_categories(paper, fig_id, panel=None):
    seen, out = set(), []
    for p in paper:
        if p.figure == fig_id and p.kind == "bar" and (panel is None or p.panel == panel):
            if p.key not in seen:
                seen.add(p.key)
                out.append(p.key)
    return out


def collect_table5(ctx, paper):
    c = Collected()
    keys = bar_categories(paper, "table5")
    rows = {}
    for r, m in ctx.match("rate", "message rate", r"^(t\d+-q\d+\S*?)(-wrap)?$"):
        rows.setdefault((m.group(1), bool(m.group(2))), []).append(r)
    cats = []
    for k in keys:
        got = False
        for wrap, label in ((False, "ours: GPU side, first post to the last doorbell"),
                            (True, "ours: to the last CQE, rings wrapping (the paper's method)")):
            for r in rows.get((k, wrap), []):
                got = True
                c.series("", label, nic_side=wrap).add(k, r)
        if got:
            cats.append((k, k))
    if not cats:
        raise Missing("no `gic rate` rows named as Table 5's (experiment rate, metric 'message rate', "
                      "names %s, ...)" % ", ".join(keys[:3]))
    c.categories[""] = cats
    return c


def collect_table34(ctx, paper):
    c = Collected()
    for metric in ("issue", "put+completion", "rtt"):
        keys = bar_categories(paper, "table3-4", metric)
        cats = []
        for k in keys:
            name, _, transport = k.partition(" [")
            transport = transport.rstrip("]")
            rs = [r for r, _ in ctx.match("lat", metric, "^%s$" % re.escape(name))
                  if not transport or r.transport == transport]
            for r in rs:
                c.series(metric, "ours", nic_side=metric != "issue").add(k, r)
            if rs:
                cats.append((k, k))
        if cats:
            c.categories[metric] = cats
    if not c.categories:
        raise Missing("no `gic lat` rows named as Table 3's or 4's (experiment lat, names "
                      "'gda-inline ORDER', 'proxy-tuned', ...)")
    return c


def collect_table10(ctx, paper):
    c = Collected()
    cats = []
    for k in bar_categories(paper, "table10"):
        got = False
        for metric, label in (("message rate cold", "ours, cold"), ("message rate warm", "ours, warm")):
            rs = [r for r, _ in ctx.match("proxy", metric, "^%s$" % re.escape(k))]
            if rs:
                got = True
                r = newest(rs)
                c.series("", "%s (idle_ms=%s warm_ms=%s)" % (label, r.param("idle_ms", "?"),
                                                            r.param("warm_ms", "?")),
                         nic_side=True).add(k, r)
        if got:
            cats.append((k, k))
    if not cats:
        raise Missing("no `gic proxy --warm/--idle` rows (experiment proxy, metric 'message rate "
                      "cold' or 'message rate warm', names 'tuned T1/R32/B1', 'tuned T1/R32/B16')")
    c.categories[""] = cats
    return c


# ---------------------------------------------------------------- the figures

class Panel:
    """One axes of a figure: its name (the key of the collected series), title, labels,
    scales ("linear", "log", "log2", "symlog")."""

    def __init__(self, name, title, xlabel, ylabel, xscale="linear", yscale="linear"):
        self.name, self.title, self.xlabel, self.ylabel = name, title, xlabel, ylabel
        self.xscale, self.yscale = xscale, yscale


class Fig:
    """One figure: its id (scripts/paper-figures.csv's figure column), file, the paper's
    figure it reproduces, title, kind ("xy" curves or "bars"), collector, panels, what
    its scales follow, and a caveat for the footer."""

    def __init__(self, id, file, paper_fig, title, kind, collect, panels, axes_basis, caveat=""):
        self.id, self.file, self.paper_fig, self.title = id, file, paper_fig, title
        self.kind, self.collect, self.panels = kind, collect, panels
        self.axes_basis, self.caveat = axes_basis, caveat


# The paper's text carries its figures' captions, not their images: each
# spec's axes_basis says what its scales follow.
FIGURES = [
    Fig("fig3a", "fig3a-inline-latency.png", "Figure 3a",
        "Inline payloads in mini-gda: one-thread issue and put+completion against inline size",
        "xy", collect_fig3a,
        [Panel("issue", "issue", "inline payload (B)", "issue (us)"),
         Panel("put+completion", "put+completion", "inline payload (B)", "put+completion (us)")],
        "linear axes: the text reads the growth per 16 B chunk"),
    Fig("fig3b", "fig3b-inline-rate.png", "Figure 3b",
        "Message rate against payload size, inline vs pointer, 16 WQEs per doorbell",
        "xy", collect_fig3b,
        [Panel("", "", "payload (B)", "message rate (M msg/s)", "log2", "log")],
        "log axes: sizes in powers of two, rates over three decades",
        "GPU-side rates end at the last doorbell, a GPU-memory store on softnic (not MMIO)"),
    Fig("fig4", "fig4-completion-scope.png", "Figure 4",
        "Completion scope against queue count: put+completion and a round-trip control",
        "xy", collect_fig4,
        [Panel("", "", "QPs", "latency (us)", "log2", "linear")],
        "QP counts in powers of two (log2 x), latency linear"),
    Fig("fig5", "fig5-sm-clock.png", "Figure 5",
        "Latency against 1/f, f the locked SM clock (fit T = C/f + B)",
        "xy", collect_fig5,
        [Panel("", "", "1 / SM clock (1/MHz)", "latency (us)")],
        "linear axes: T = C/f + B is a line in 1/f"),
    Fig("fig6", "fig6-loaded-rtt.png", "Figure 6a",
        "Probe round trip under load against background CTAs (dashed: shared queue, solid: reserved)",
        "xy", collect_fig6,
        [Panel("", "", "background CTAs", "probe rtt p50 (us)", "symlog", "log")],
        "log y: the shared queues lose three orders of magnitude; CTAs from 0 (symlog x)"),
    Fig("fig7", "fig7-proxy-rate.png", "Figure 7",
        "8 B proxy message rate against worker count",
        "xy", collect_fig7,
        [Panel("", "", "workers (T)", "message rate (M msg/s)", "log2", "log")],
        "workers in powers of two; log y: the proxies sit an order of magnitude under IBGDA",
        "softnic's CPU engine executes the proxy's posts"),
    Fig("fig8", "fig8-goodput.png", "Figure 8",
        "Pipelined goodput against payload size (stars: first size at 90%)",
        "xy", collect_fig8,
        [Panel("", "", "payload (B)", "goodput (GB/s)", "log2", "linear")],
        "log2 x over payload sizes, goodput linear (against the 24.8 GB/s reference)"),
    Fig("fig9", "fig9-dormant-loss.png", "Figure 9",
        "Useful-work throughput lost against the kernel without communication code",
        "bars", collect_fig9,
        [Panel("a", "(a)", "", "throughput loss (%)"),
         Panel("b", "(b)", "", "throughput loss (%)")],
        "bars, linear % (as the caption's three bars per arm)",
        "the waiting loss includes softnic's GPU engine, which shares the SMs with the caller"),
    Fig("fig10", "fig10-connection-scaling.png", "Figure 10a",
        "8 B rate through one NIC against its active QPs",
        "xy", collect_fig10,
        [Panel("", "", "active QPs (connections)", "message rate (M msg/s)", "log2", "linear")],
        "log2 x (the paper's QP counts span 1-32,768), rate linear"),
    Fig("fig11", "fig11-put-completion-vs-size.png", "Figure 11",
        "Single-operation put+completion against payload size",
        "xy", collect_fig11,
        [Panel("", "", "payload (B)", "put+completion (us)", "log2", "log")],
        "log2 x over payload sizes, log y"),
    Fig("table3-4", "table3-4-single-op.png", "Tables 3 and 4",
        "One 8 B operation: issue, put+completion and round trip per path and ordering",
        "bars", collect_table34,
        [Panel("issue", "issue", "", "us"), Panel("put+completion", "put+completion", "", "us"),
         Panel("rtt", "rtt", "", "us")],
        "bars, linear us"),
    Fig("table5", "table5-rate.png", "Table 5",
        "mini-gda 8 B message rate per Table 5 row",
        "bars", collect_table5,
        [Panel("", "", "", "message rate (M msg/s)", "linear", "log")],
        "bars, log y: Table 5's rows span three decades"),
    Fig("table10", "table10-proxy-cold-warm.png", "Table 10",
        "mini-proxy capacity, one worker: cold and warm workers",
        "bars", collect_table10,
        [Panel("", "", "", "message rate (M msg/s)")],
        "bars, linear"),
]


# ---------------------------------------------------------------- drawing

PAPER_MARKERS = "DvP^<>phX8"


def transport_text(transport, runs):
    providers = sorted({r.provider for r in runs})
    on = "/".join(providers)
    if transport == "softnic-gpu":
        return "softnic, GPU engine"
    if transport == "softnic-cpu":
        return "softnic, CPU engine"
    if transport == "nvshmem-p2p":
        return "NVSHMEM over NVLink P2P (no NIC)"
    if transport.startswith("nvshmem-"):
        what = transport.split("-", 1)[1].upper()
        return "NVSHMEM %s on %s" % (what, "softnic's emulated mlx5" if on == "softnic" else on)
    return "%s (provider %s)" % (transport, on)


def footer(fig, c, rows, nic_side, width, paper_path):
    runs = []
    for r in rows:
        if r.run not in runs:
            runs.append(r.run)
    gpus = sorted({r.gpu for r in runs})
    recorded, run_only = set(), set()
    for r in rows:
        mhz, where = r.sm_mhz()
        (recorded if where == "row" else run_only).add(round(mhz))
    def fmt(clocks):
        if not any(clocks):
            return "none measured (no GPU)"
        return "/".join(str(v) for v in sorted(clocks) if v) + " MHz"
    clock = "; ".join(filter(None, [
        recorded and fmt(recorded) + ", recorded by the rows",
        run_only and fmt(run_only) + (", the run's, for rows that do not record it"
                                       if recorded else ", the run's (the rows do not record it)")]))
    engines = "; ".join(sorted({transport_text(r.transport, runs) for r in rows}))
    provider = "provider %s, engine %s" % ("/".join(sorted({r.provider for r in runs})),
                                            "/".join(sorted({r.engine for r in runs})))
    softnic = any(r.provider == "softnic" for r in runs) or \
        any(r.transport.startswith("softnic") for r in rows)
    parts = ["GPU: %s" % ", ".join(gpus), "SM clock: %s" % clock,
             "%s; rows: %s" % (provider, engines)]
    if nic_side and softnic:
        parts.append("NIC-side numbers: softnic (not a NIC)")
    if fig.caveat:
        parts.append(fig.caveat)
    parts.append("data: " + ", ".join("%s (%s, %s)" % (r.path, r.commit, r.date[:10]) for r in runs))
    parts.append("paper: %s; axes: %s" % (paper_path, fig.axes_basis))
    text = " | ".join(parts)
    lines = textwrap.wrap(text, width)
    for n in c.notes:
        lines += textwrap.wrap("note: " + n, width)
    return "\n".join(lines)


def set_scale(ax, axis, scale):
    setter = ax.set_xscale if axis == "x" else ax.set_yscale
    if scale == "log2":
        setter("log", base=2)
    elif scale == "symlog":
        setter("symlog", linthresh=1)
    else:
        setter(scale)


def errorbars(points, log):
    xs, ys, lo, hi = [], [], [], []
    for x, r in points:
        if log and r.p50 <= 0:
            continue
        low, high = r.low_high()
        xs.append(x)
        ys.append(r.p50)
        lo.append(r.p50 - low)
        hi.append(high - r.p50)
    return xs, ys, [lo, hi]


def draw_paper_group(ax, g, color, marker):
    """One paper series: its points joined by a dotted line, or one line, range or segment."""
    p = g[0]
    label = "%s [%s]" % (p.series, p.platform)
    if p.kind in ("point", "star"):
        g = sorted(g, key=lambda q: q.x)
        star = p.kind == "star"
        ax.plot([q.x for q in g], [q.y for q in g], linestyle=":" if len(g) > 1 else "none",
                linewidth=1, marker="*" if star else marker, markersize=13 if star else 7,
                markerfacecolor=color if star else "none", markeredgecolor="k" if star else color,
                markeredgewidth=1.0 if star else 1.6, color=color, label=label)
    elif p.kind == "hline":
        ax.axhline(p.y, color=color, linestyle=":", linewidth=1.6, label=label)
    elif p.kind == "vline":
        ax.axvline(p.x, color="0.4", linestyle="-.", linewidth=1, label=label)
    elif p.kind == "range":
        ax.fill_between([p.x, p.x2], [p.y, p.y], [p.y2, p.y2], color=color, alpha=0.18,
                        label=label)
    elif p.kind == "segment":
        ax.plot([p.x, p.x2], [p.y, p.y2], color=color, linestyle="--", linewidth=1.4,
                label=label)


def group_paper(items):
    """Items of one series label together (Table 7's six points are one series)."""
    out = []
    for p in items:
        for g in out:
            if g[0].series == p.series and g[0].kind == p.kind and p.kind in ("point", "star"):
                g.append(p)
                break
        else:
            out.append([p])
    return out


def draw_xy(plt, ax, panel, series, paper, colors):
    log = panel.yscale == "log"
    for s in series:
        pts = s.sorted()
        xs, ys, err = errorbars(pts, log)
        if not xs:
            continue
        runs = {r.runs for _, r in pts if r.runs}
        label = s.label + (" (median of %s runs)" % "/".join(str(n) for n in sorted(runs))
                           if runs else "")
        style = {"marker": "o", "linestyle": "-"}
        style.update(s.style)
        line = ax.errorbar(xs, ys, yerr=err, capsize=2, markersize=4, linewidth=1.2,
                           label=label, **style)
        for sx in s.stars:
            for x, y in zip(xs, ys):
                if x == sx:
                    ax.plot([x], [y], marker="*", markersize=12, color=line[0].get_color(),
                            markeredgecolor="k", linestyle="none")
        if s.annotate:
            ax.annotate(s.annotate, (xs[-1], ys[-1]), textcoords="offset points", xytext=(4, 4),
                        fontsize=6.5, color=line[0].get_color())
    for i, g in enumerate(group_paper(paper)):
        draw_paper_group(ax, g, colors[i % len(colors)], PAPER_MARKERS[i % len(PAPER_MARKERS)])


def draw_bars(plt, ax, panel, cats, series, paper, colors):
    n = len(series)
    width = 0.8 / max(n, 1)
    index = {k: i for i, (k, _) in enumerate(cats)}
    log = panel.yscale == "log"
    for j, s in enumerate(series):
        xs, ys, lo, hi = [], [], [], []
        for k, r in s.points:
            if log and r.p50 <= 0:
                continue
            low, high = r.low_high()
            xs.append(index[k] - 0.4 + width * (j + 0.5))
            ys.append(r.p50)
            lo.append(r.p50 - low)
            hi.append(high - r.p50)
        ax.bar(xs, ys, width=width * 0.95, yerr=[lo, hi], capsize=2, label=s.label,
               color=colors[j % len(colors)], alpha=0.85)
    groups = group_by_series(paper)
    for g, p_items in enumerate(groups):
        # Beside the measured bar of the same rank when there are as many
        # paper series as measured ones (cold/warm), else centred.
        shift = -0.4 + width * (g + 0.5) if len(groups) == n else 0.0
        xs = [index[p.key] + shift for p in p_items if p.key in index]
        ys = [p.y for p in p_items if p.key in index]
        if xs:
            ax.plot(xs, ys, linestyle="none", marker=PAPER_MARKERS[g % len(PAPER_MARKERS)],
                    markersize=8, color="k", markerfacecolor="gold" if g == 0 else "tomato",
                    label="%s [%s]" % (p_items[0].series, p_items[0].platform))
    ax.set_xticks(range(len(cats)))
    ax.set_xticklabels([t for _, t in cats], rotation=35 if len(cats) > 6 else 0,
                       ha="right" if len(cats) > 6 else "center", fontsize=6.5)
    if not log:
        ax.axhline(0, color="0.3", linewidth=0.6)


def group_by_series(items):
    out = {}
    for p in items:
        out.setdefault(p.series, []).append(p)
    return list(out.values())


def check_paper(c, paper):
    """gic's own paper number on a row (bench/gic/paper.c) against the CSV's for its bar."""
    for panel, ss in c.panels.items():
        for s in ss:
            for key, r in s.points:
                if r.paper is None or not isinstance(key, str):
                    continue
                csv_values = [p.y for p in paper if p.kind == "bar" and p.key == key and
                              p.panel == panel]
                if csv_values and not any(abs(r.paper - v) <= 1e-6 * max(1.0, abs(v))
                                          for v in csv_values):
                    c.notes.append("%s %s: the row's paper value %g (%s, %s) is not "
                                   "paper-figures.csv's %s" % (
                                       key, r.metric, r.paper, r.run.stem, r.where,
                                       "/".join("%g" % v for v in csv_values)))


def draw_figure(plt, fig, c, paper, path, paper_path):
    panels = [p for p in fig.panels if p.name in c.panels or p.name in c.categories]
    n = len(panels)
    # One panel of curves: the legend beside it, not over the curves.
    outside = n == 1 and fig.kind == "xy"
    width = 13.0 if outside else {1: 9.5, 2: 13.5, 3: 15.5}[n]
    f, axes = plt.subplots(1, n, figsize=(width, 6.2), squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    paper_colors = ["#7f0000", "#004c99", "#006600", "#8b4513", "#4b0082", "#b8860b",
                    "#2f4f4f", "#c71585"]
    rows = c.rows()
    nic_side = False
    for ax, panel in zip(axes[0], panels):
        series = c.panels.get(panel.name, [])
        nic_side = nic_side or any(s.nic_side for s in series)
        items = [p for p in paper if p.panel == panel.name]
        if fig.kind == "bars":
            draw_bars(plt, ax, panel, c.categories.get(panel.name, []), series, items, colors)
        else:
            draw_xy(plt, ax, panel, series, items, paper_colors)
            set_scale(ax, "x", panel.xscale)
        set_scale(ax, "y", panel.yscale)
        title = panel.title
        if panel.name in c.title_extra:
            title = "%s %s" % (title, c.title_extra[panel.name])
        ax.set_title(title, fontsize=9)
        ax.set_xlabel(panel.xlabel)
        ax.set_ylabel(panel.ylabel)
        ax.grid(True, which="major", alpha=0.3)
        if outside:
            ax.legend(fontsize=6.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
        else:
            ax.legend(fontsize=6, loc="best", framealpha=0.85)
    f.suptitle("%s (paper's %s): %s" % (fig.file[:-4], fig.paper_fig, fig.title), fontsize=10)
    text = footer(fig, c, rows, nic_side, int(width * 16.5), paper_path)
    nlines = text.count("\n") + 1
    bottom = min(0.45, 0.03 + 0.022 * nlines)
    f.text(0.01, 0.005, text, fontsize=6.3, va="bottom", ha="left", family="monospace")
    f.tight_layout(rect=[0, bottom, 1, 0.96])
    f.savefig(path, dpi=110)
    plt.close(f)


# ---------------------------------------------------------------- main

def parse_args(argv):
    opts = {"only": None, "paper": PAPER_CSV, "require": False, "list": False}
    pos = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("--only", "--paper"):
            if i + 1 >= len(argv):
                raise InputError("%s needs a value" % a)
            opts[a[2:]] = argv[i + 1]
            i += 2
            continue
        if a == "--require-matplotlib":
            opts["require"] = True
        elif a == "--list":
            opts["list"] = True
        elif a in ("-h", "--help"):
            print(__doc__.strip())
            sys.exit(0)
        elif a.startswith("--"):
            raise InputError("unknown option %s" % a)
        else:
            pos.append(a)
        i += 1
    if opts["only"] is not None:
        ids = [s for s in opts["only"].split(",") if s]
        known = {f.id for f in FIGURES}
        bad = [s for s in ids if s not in known]
        if bad:
            raise InputError("--only: unknown figure %s (known: %s)"
                             % (", ".join(bad), ", ".join(f.id for f in FIGURES)))
        opts["only"] = ids
    return opts, pos


def main(argv):
    try:
        opts, pos = parse_args(argv[1:])
    except InputError as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        print("usage: " + __doc__.strip().splitlines()[0].split(": ", 1)[1], file=sys.stderr)
        return 2
    if opts["list"]:
        for f in FIGURES:
            print("%-9s %-34s %s" % (f.id, f.file, f.paper_fig))
        return 0
    if len(pos) < 2:
        print("usage: " + __doc__.strip().splitlines()[0].split(": ", 1)[1], file=sys.stderr)
        return 2
    inputs, out = pos[:-1], pos[-1]
    try:
        rows = load_inputs(inputs)
        paper = load_paper(opts["paper"])
    except InputError as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 2
    # The input is checked first, so that bad input is reported with or
    # without matplotlib.
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        if opts["require"]:
            print("%s: matplotlib is not installed for %s (%s): run scripts/install-deps.sh"
                  % (PROG, sys.executable, e), file=sys.stderr)
            return 1
        print("%s: matplotlib not installed: skipping the plots" % PROG)
        return 0
    if os.path.exists(out) and not os.path.isdir(out):
        print("%s: %s: not a directory (the last argument is the output directory)"
              % (PROG, out), file=sys.stderr)
        return 2
    if not os.path.isdir(out):
        try:
            os.makedirs(out)
        except OSError as e:
            print("%s: %s: cannot create the directory: %s" % (PROG, out, e.strerror),
                  file=sys.stderr)
            return 2
    made, missing = [], []
    for fig in FIGURES:
        if opts["only"] and fig.id not in opts["only"]:
            continue
        ctx = Ctx(rows)
        items = [p for p in paper if p.figure == fig.id]
        try:
            c = fig.collect(ctx, items)
        except InputError as e:
            print("%s: %s" % (PROG, e), file=sys.stderr)
            return 2
        except Missing as e:
            missing.append((fig, str(e)))
            print("%s: not drawn: %s (%s): %s" % (PROG, fig.file, fig.paper_fig, e))
            continue
        dedupe(c)
        if fig.kind == "bars":
            alone = []
            for p in items:
                if p.kind == "bar" and p.key not in [k for k, _ in c.categories.get(p.panel, [])]:
                    if p.key not in alone:
                        alone.append(p.key)
            if alone:
                c.notes.append("%d paper bar(s) without a measured row, not drawn: %s"
                               % (len(alone), "; ".join(alone)))
        if ctx.skipped:
            c.notes.append("%d row(s) with validated=false not drawn: %s" % (
                len(ctx.skipped), ", ".join(sorted({"%s (%s)" % (r.name, r.run.stem)
                                                    for r in ctx.skipped}))))
        check_paper(c, items)
        path = os.path.join(out, fig.file)
        shown = os.path.relpath(opts["paper"]) if opts["paper"] == PAPER_CSV else opts["paper"]
        draw_figure(plt, fig, c, items, path, shown)
        files = sorted({r.run.path for r in c.rows()})
        nseries = sum(len(s) for s in c.panels.values())
        print("%s: wrote %s (%s): %d measured series, %d paper items; from %s"
              % (PROG, path, fig.paper_fig, nseries, len(items), ", ".join(files)))
        for n in c.notes:
            print("%s:   note: %s" % (PROG, n))
        made.append(fig)
    report = os.path.join(out, "report.md")
    if os.path.exists(report):
        with open(report, "a") as f:
            f.write("\n## The paper's figures\n\n")
            for fig in made:
                f.write("![%s (%s)](%s)\n\n" % (fig.paper_fig, fig.file, fig.file))
            for fig, why in missing:
                f.write("- not drawn: %s (%s): %s\n" % (fig.file, fig.paper_fig, why))
    print("%s: %d figure(s) in %s; %d not drawn" % (PROG, len(made), out, len(missing)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
