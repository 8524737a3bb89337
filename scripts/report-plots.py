#!/usr/bin/env python3
"""Plots of a `gic suite` run: report-plots.py RESULTS.json DIR

Reads the suite's JSON (DIR/results.json; its aggregate rows for a
`gic suite --repeat` run), writes PNGs into DIR (issue time
per ordering, rate per Table 5 row, proxy rate against B, payload goodput
against size, loaded round trip) and appends image links to DIR/report.md.
Needs matplotlib; without it, prints a skip message and exits 0.
"""
import json
import os
import sys


def rows(results, exp, metric=None):
    return [r for r in results if r["experiment"] == exp and
            (metric is None or r["metric"] == metric)]


def bar(plt, path, title, items, unit, paper=True):
    """A bar chart of (label, value, paper-or-None) items."""
    if not items:
        return None
    fig, ax = plt.subplots(figsize=(8, 4))
    xs = range(len(items))
    ax.bar([x - 0.2 for x in xs], [v for _, v, _ in items], width=0.4, label="measured")
    if paper and any(p is not None for _, _, p in items):
        ax.bar([x + 0.2 for x in xs], [p or 0 for _, _, p in items], width=0.4,
               label="paper (H200)")
        ax.legend()
    ax.set_xticks(list(xs))
    ax.set_xticklabels([l for l, _, _ in items], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel(unit)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def line(plt, path, title, xs, ys, xlabel, unit):
    if not xs:
        return None
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(xs, ys, marker="o")
    ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(unit)
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def items_of(rs):
    return [(r["name"], r["p50"], r["paper"]) for r in rs]


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report-plots.py: matplotlib not installed: skipping the plots")
        return 0
    with open(argv[1]) as f:
        doc = json.load(f)
    # A --repeat run: its aggregate rows (p50 the median of the runs' p50s).
    results = doc.get("aggregate") or doc["results"]
    out = argv[2]
    made = []
    made.append(bar(plt, os.path.join(out, "lat_issue.png"), "issue time per ordering",
                    items_of([r for r in rows(results, "lat", "issue")
                              if "size=" not in r["name"]]), "us"))
    # The register-payload rows (gda-inline, the paper's mini-gda); the
    # staged rows (gda-inline-staged) are in the report's table.
    sweep = sorted([r for r in rows(results, "lat", "issue")
                    if "size=" in r["name"] and not r["name"].endswith("floor")
                    and r["name"].startswith("gda-inline ")],
                   key=lambda r: int(r["name"].split("size=")[1]))
    made.append(line(plt, os.path.join(out, "lat_inline_sweep.png"),
                     "issue time against inline payload size (payload in registers)",
                     [int(r["name"].split("size=")[1]) for r in sweep],
                     [r["p50"] for r in sweep], "inline payload bytes", "us"))
    made.append(bar(plt, os.path.join(out, "rate.png"), "message rate per row",
                    items_of(rows(results, "rate", "message rate")), "M msg/s"))
    made.append(bar(plt, os.path.join(out, "proxy_rate.png"), "proxy rate against T/R/B",
                    items_of([r for r in results if r["experiment"] == "proxy" and
                              r["metric"].startswith("message rate")]), "M msg/s"))
    good = [r for r in rows(results, "payload", "goodput")]
    sizes = [int(r["name"].split("size=")[1]) for r in good]
    made.append(line(plt, os.path.join(out, "payload.png"), "pipelined goodput", sizes,
                     [r["p50"] for r in good], "payload bytes", "GB/s"))
    made.append(bar(plt, os.path.join(out, "loaded.png"), "probe round trip under load",
                    items_of([r for r in results if r["experiment"] == "loaded" and
                              r["metric"] in ("rtt", "loaded rtt")]), "us"))
    made.append(bar(plt, os.path.join(out, "kernel_loss.png"),
                    "enclosing kernel: useful throughput lost",
                    items_of(rows(results, "kernel", "loss")), "%", paper=False))
    made = [m for m in made if m]
    with open(os.path.join(out, "report.md"), "a") as f:
        f.write("\n## plots\n\n")
        for m in made:
            f.write("![%s](%s)\n\n" % (os.path.basename(m), os.path.basename(m)))
    print("report-plots.py: %d plots in %s" % (len(made), out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
