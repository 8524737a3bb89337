#!/usr/bin/env python3
"""bench/gic/test_procs_rows.py ONE.json PROCS.json [--launch mpi]: the rows
of a `gic ... --procs 2` run (PROCS) against the same command with both PEs
in one process (ONE). They must be the same rows in the same order (name,
metric, params but procs=2 and launch=), every PROCS row validated (PE 1's
verdicts) with procs=2 in its params and transport mlx5-emulated, and the
run records saying provider mlx5 and peer "process" (ONE: "in-process").
--launch mpi: PROCS ran as two MPI ranks (its run record says launch "mpi",
its rows launch=mpi) and ONE is the fork launch of the same command (peer
"process", launch "fork"). Exit status 0 when so, 1 (after saying what
differs) when not."""
import json
import sys


def rows(path):
    with open(path) as f:
        d = json.load(f)
    return d["run"], d["results"]


def keys(row):
    """The row's params but procs=2 and the host's CPU state; of payload's
    first-size row (its size= is what it measured) the key alone."""
    skip = ("procs", "launch", "cpu0_mhz", "governor")
    measured = row["metric"].startswith("first size")
    out = []
    for p in row["params"].split():
        k = p.split("=", 1)[0]
        if k not in skip:
            out.append(k if measured and k == "size" else p)
    return out


def main():
    args = sys.argv[1:]
    mpi = args[2:] == ["--launch", "mpi"]
    if len(args) != 2 and not mpi:
        print(__doc__)
        return 2
    one_run, one = rows(args[0])
    run, got = rows(args[1])
    launch = "mpi" if mpi else "fork"
    bad = []
    if run.get("provider") != "mlx5" or run.get("peer") != "process":
        bad.append("run record: provider %r peer %r" % (run.get("provider"), run.get("peer")))
    if run.get("launch") != launch:
        bad.append("run record: launch %r, not %r" % (run.get("launch"), launch))
    if not mpi and one_run.get("peer") != "in-process":
        bad.append("one-process run record: peer %r" % one_run.get("peer"))
    if mpi and (one_run.get("peer"), one_run.get("launch")) != ("process", "fork"):
        bad.append("fork-launch run record: peer %r launch %r" %
                   (one_run.get("peer"), one_run.get("launch")))
    want = [(x["name"], x["metric"], keys(x)) for x in one]
    have = [(x["name"], x["metric"], keys(x)) for x in got]
    if want != have:
        bad.append("rows differ:\n  %s: %s\n  %s: %s" % ("fork launch" if mpi else "one process",
                                                        want, launch + " launch", have))
    for x in got:
        params = x["params"].split()
        if not (x["validated"] and "procs=2" in params and ("launch=mpi" in params) == mpi
                and x["transport"] == "mlx5-emulated" and x["count"] > 0):
            bad.append("row %s / %s: validated %s, params %r, transport %s" %
                       (x["name"], x["metric"], x["validated"], x["params"], x["transport"]))
    print("%d rows, peer %s, launch %s" % (len(got), run.get("peer"), run.get("launch")))
    for b in bad:
        print("FAIL: " + b)
    return 1 if bad or not got else 0


if __name__ == "__main__":
    sys.exit(main())
