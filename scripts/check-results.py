#!/usr/bin/env python3
"""Checks gic result files (gic <sub> --json FILE) against a JSON Schema.

usage: check-results.py [--schema SCHEMA] [--repeat N] [--timer-row] [--timer-grows]
       [--scope-rows QPS SCOPES] [--state] [--placement KIND] FILE...

Implements the subset of JSON Schema (draft 2020-12) that
bench/gic/result.schema.json uses: type (a name or a list of names),
required, properties, items, enum, minimum. Then checks every result:
validated is true, min <= p50 <= p99 <= max; in a `gic suite --repeat`
file, that every result names its run, and every aggregate row is
consistent with the rows it aggregates (p50 the median of their p50s,
p50_min <= p50 <= p50_max). --repeat N: the file must be a repetition of N
runs with aggregate rows. --timer-row: the file must hold a timer-check
row with sane, consistent fields; its validity is the machine's (a noisy
host fails it), so it is not required. --timer-grows: also a positive
difference (for a quiet machine: on a loaded 2-core host the scheduler's
slices swamp even 1 ms). --scope-rows
QPS SCOPES (comma-separated, as gic lat's --qps and --scope): the file must
hold, per count N and scope S, a `gic lat` put+completion row named
'<path> <order> qps=N scope=S' with qps=N and scope=S in its params, and per
count an rtt row '<path> <order> qps=N' with scope=none (Figure 4's sweep).
--placement KIND (shared, green or off-gpu): the run's
placement record must be KIND with counts that follow from it (green: the
engine's group at least the SMs asked, both groups within the device and
the SM probe's counts within them, in every kernel and lat row of the GPU
engine; shared and off-gpu: no split). --state: every
result carries the processor state measured for it (cpu0_mhz= and
governor= in params; sm_mhz= too where the run measured an SM clock).
Python standard library only.
Exit status 0 when every file passes, 1 otherwise (each problem printed),
2 for bad usage.
"""
import json
import os
import sys

TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
}


def check(schema, value, path, errors):
    """Appends to errors every way value breaks schema (at path)."""
    want = schema.get("type")
    if want is not None:
        names = want if isinstance(want, list) else [want]
        if not any(TYPES[n](value) for n in names):
            errors.append("%s: expected %s, got %r" % (path, "/".join(names), value))
            return
    if "enum" in schema and value not in schema["enum"]:
        errors.append("%s: %r is not one of %r" % (path, value, schema["enum"]))
    if "minimum" in schema and TYPES["number"](value) and value < schema["minimum"]:
        errors.append("%s: %r is below the minimum %r" % (path, value, schema["minimum"]))
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                errors.append("%s: missing required field '%s'" % (path, key))
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                check(sub, value[key], "%s.%s" % (path, key), errors)
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            check(schema["items"], item, "%s[%d]" % (path, i), errors)


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def check_repeat(doc, want_runs, errors):
    """A repetition's runs, tags and aggregate rows."""
    rep = doc.get("repeat")
    agg = doc.get("aggregate")
    if rep is None and agg is None:
        if want_runs:
            errors.append("repeat: missing (expected a --repeat %d file)" % want_runs)
        return
    if rep is None or agg is None:
        errors.append("repeat and aggregate: one without the other")
        return
    runs = rep.get("runs")
    if want_runs and runs != want_runs:
        errors.append("repeat.runs: %r, expected %d" % (runs, want_runs))
    if len(rep.get("files", [])) != runs or len(rep.get("exit_status", [])) != runs:
        errors.append("repeat: files and exit_status must have one entry per run")
    if not agg:
        errors.append("aggregate: empty")
    by_run = {}
    for i, r in enumerate(doc.get("results", [])):
        if not isinstance(r.get("run"), int) or not 1 <= r["run"] <= (runs or 0):
            errors.append("results[%d]: run %r is not in 1..%r" % (i, r.get("run"), runs))
        by_run.setdefault(r.get("run"), []).append(r)
    for i, a in enumerate(agg):
        where = "aggregate[%d] (%s / %s / %s)" % (i, a.get("experiment"), a.get("name"),
                                                  a.get("metric"))
        p50s, of = a.get("p50_runs", []), a.get("run_of", [])
        if not (len(p50s) == len(of) == a.get("runs")) or not p50s:
            errors.append("%s: runs %r, p50_runs %r, run_of %r disagree"
                          % (where, a.get("runs"), p50s, of))
            continue
        if a.get("validated") is not True:
            errors.append("%s: not validated in every run" % where)
        if not (a["p50_min"] <= a["p50"] <= a["p50_max"]) or \
                abs(median(p50s) - a["p50"]) > 1e-9 * max(1.0, abs(a["p50"])) or \
                a["p50_min"] != min(p50s) or a["p50_max"] != max(p50s):
            errors.append("%s: p50 %r, min %r, max %r do not follow from p50_runs %r"
                          % (where, a["p50"], a["p50_min"], a["p50_max"], p50s))
        for run, p50 in zip(of, p50s):
            if not any(r["experiment"] == a["experiment"] and r["name"] == a["name"] and
                       r["metric"] == a["metric"] and r["p50"] == p50
                       for r in by_run.get(run, [])):
                errors.append("%s: run %d has no such row with p50 %r" % (where, run, p50))


def check_state(doc, errors):
    """Every row says the processor state measured for it."""
    gpu = (doc.get("run", {}).get("sm_mhz") or 0) > 0
    for i, r in enumerate(doc.get("results", [])):
        keys = [t.split("=", 1)[0] for t in r.get("params", "").split()]
        want = ["cpu0_mhz", "governor"] + (["sm_mhz"] if gpu else [])
        missing = [k for k in want if k not in keys]
        if missing:
            errors.append("results[%d] (%s / %s / %s): params lack %s: %r"
                          % (i, r.get("experiment"), r.get("name"), r.get("metric"),
                             ", ".join(missing), r.get("params")))


def check_timer(doc, errors, grows):
    """A timer-check row: present, its fields sane (with grows: the
    difference positive)."""
    rows = [r for r in doc.get("results", []) if r.get("metric") == "timer-check"]
    if not rows:
        errors.append("results: no timer-check row")
    for r in rows:
        where = "timer-check row %r" % r.get("name")
        kv = dict(t.split("=", 1) for t in r.get("params", "").split() if "=" in t)
        try:
            d, plain, delayed = (float(kv[k]) for k in
                                 ("delay_us", "rtt_plain_p50", "rtt_delayed_p50"))
            ratio, tol = float(kv["ratio"]), float(kv["tolerance_us"])
        except (KeyError, ValueError):
            errors.append("%s: params lack delay_us, rtt_plain_p50, rtt_delayed_p50, ratio "
                          "or tolerance_us: %r" % (where, r.get("params")))
            continue
        diff = r["p50"]
        if r.get("unit") != "us" or r.get("count") != 1:
            errors.append("%s: unit %r, count %r (expected us, 1)"
                          % (where, r.get("unit"), r.get("count")))
        if not (d > 0 and plain > 0 and delayed > 0):
            errors.append("%s: delay %r, plain %r, delayed %r must be positive"
                          % (where, d, plain, delayed))
        if grows and not diff > 0:
            errors.append("%s: the round trip did not grow with the delay (%r us)"
                          % (where, diff))
        if abs(diff - (delayed - plain)) > 0.002 or abs(ratio - diff / d) > 0.001 or \
                abs(tol - (0.1 * d + 2)) > 0.05:
            errors.append("%s: p50 %r, ratio %r or tolerance %r do not follow from the "
                          "params" % (where, diff, ratio, tol))
        if r.get("validated") is True and abs(diff - d) > tol:
            errors.append("%s: validated although off by %r us" % (where, diff - d))


def check_scope(doc, counts, scopes, errors):
    """Figure 4's sweep: one put+completion row per (count, scope), one rtt
    row per count, names and params agreeing."""
    rows = [r for r in doc.get("results", []) if r.get("experiment") == "lat"]

    def params(r):
        return dict(t.split("=", 1) for t in r.get("params", "").split() if "=" in t)

    for n in counts:
        for sc in scopes:
            suffix = " qps=%s scope=%s" % (n, sc)
            got = [r for r in rows if r.get("metric") == "put+completion"
                   and r.get("name", "").endswith(suffix)]
            if not got:
                errors.append("lat: no put+completion row named '...%s'" % suffix)
            for r in got:
                kv = params(r)
                if kv.get("qps") != str(n) or kv.get("scope") != sc:
                    errors.append("lat row %r: params %r do not name qps=%s scope=%s"
                                  % (r["name"], r.get("params"), n, sc))
        suffix = " qps=%s" % n
        got = [r for r in rows if r.get("metric") == "rtt" and r.get("name", "").endswith(suffix)]
        if not got:
            errors.append("lat: no rtt row named '...%s'" % suffix)
        for r in got:
            kv = params(r)
            if kv.get("qps") != str(n) or kv.get("scope") != "none":
                errors.append("lat row %r: params %r do not name qps=%s scope=none"
                              % (r["name"], r.get("params"), n))


def check_placement(doc, kind, errors):
    """The run's placement record is kind, and its counts (and, for green,
    every GPU-engine kernel and lat row's split) follow from it."""
    pl = doc.get("run", {}).get("placement")
    if not isinstance(pl, dict):
        errors.append("run.placement: missing")
        return
    if pl.get("kind") != kind:
        errors.append("run.placement.kind: %r, expected %r" % (pl.get("kind"), kind))
        return
    asked, eng, cal, dev = (pl.get(k, 0) for k in
                            ("engine_sms_asked", "engine_sms", "caller_sms", "device_sms"))
    if kind != "green":
        if asked or eng or cal:
            errors.append("run.placement: %s with a split (asked %r, engine %r, callers %r)"
                          % (kind, asked, eng, cal))
        return
    if not (asked >= 1 and eng >= asked and cal >= 1 and eng + cal <= dev):
        errors.append("run.placement: asked %r, engine %r, callers %r, device %r do not "
                      "follow" % (asked, eng, cal, dev))
    for r in doc.get("results", []):
        if r.get("experiment") not in ("kernel", "lat") or r.get("transport") != "softnic-gpu":
            continue
        kv = dict(t.split("=", 1) for t in r.get("params", "").split() if "=" in t)
        where = "%s row %r / %s" % (r["experiment"], r.get("name"), r.get("metric"))
        try:
            got = [int(kv[k]) for k in ("engine_sms", "caller_sms", "engine_sms_seen",
                                        "caller_sms_seen")]
        except (KeyError, ValueError):
            errors.append("%s: params lack the split (placement=green engine_sms= "
                          "caller_sms= ..._seen=): %r" % (where, r.get("params")))
            continue
        if kv.get("placement") != "green" or got[0] != eng or got[1] != cal or \
                not (1 <= got[2] <= got[0] and 1 <= got[3] <= got[1]):
            errors.append("%s: split %r does not follow the run's (engine %r, callers %r)"
                          % (where, got, eng, cal))


def check_results(doc, errors, timer_row=False):
    """The checks beyond the schema: validation and ordered statistics."""
    results = doc.get("results", []) if isinstance(doc, dict) else []
    if not results:
        errors.append("results: empty")
    for i, r in enumerate(results):
        where = "results[%d] (%s / %s / %s)" % (i, r.get("experiment"), r.get("name"),
                                                r.get("metric"))
        if timer_row and r.get("metric") == "timer-check":
            pass  # its validity is the machine's: check_timer
        elif r.get("validated") is not True:
            errors.append("%s: payload validation failed" % where)
        try:
            if not (r["min"] <= r["p50"] <= r["p99"] <= r["max"]):
                errors.append("%s: statistics out of order: min %r p50 %r p99 %r max %r"
                              % (where, r["min"], r["p50"], r["p99"], r["max"]))
        except (KeyError, TypeError):
            errors.append("%s: statistics missing or not numbers" % where)


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    schema_path = os.path.join(here, "..", "bench", "gic", "result.schema.json")
    files = []
    want_runs = 0
    timer_row = False
    timer_grows = False
    scope_rows = None
    state = False
    placement = None
    i = 1
    while i < len(argv):
        if argv[i] == "--schema" and i + 1 < len(argv):
            schema_path = argv[i + 1]
            i += 2
        elif argv[i] == "--repeat" and i + 1 < len(argv) and argv[i + 1].isdigit():
            want_runs = int(argv[i + 1])
            i += 2
        elif argv[i] in ("--timer-row", "--timer-grows"):
            timer_row = True
            timer_grows = timer_grows or argv[i] == "--timer-grows"
            i += 1
        elif argv[i] == "--scope-rows" and i + 2 < len(argv):
            scope_rows = (argv[i + 1].split(","), argv[i + 2].split(","))
            i += 3
        elif argv[i] == "--placement" and i + 1 < len(argv) and \
                argv[i + 1] in ("shared", "green", "off-gpu"):
            placement = argv[i + 1]
            i += 2
        elif argv[i] == "--state":
            state = True
            i += 1
        elif argv[i].startswith("-"):
            print("check-results.py: unknown flag %r" % argv[i], file=sys.stderr)
            return 2
        else:
            files.append(argv[i])
            i += 1
    if not files:
        print("\n".join(__doc__.strip().splitlines()[2:4]), file=sys.stderr)
        return 2
    with open(schema_path) as f:
        schema = json.load(f)
    failed = 0
    for name in files:
        errors = []
        try:
            with open(name) as f:
                doc = json.load(f)
        except (OSError, ValueError) as e:
            errors.append("cannot read: %s" % e)
        else:
            check(schema, doc, "$", errors)
            check_results(doc, errors, timer_row)
            if isinstance(doc, dict):
                check_repeat(doc, want_runs, errors)
                if timer_row:
                    check_timer(doc, errors, timer_grows)
                if scope_rows:
                    check_scope(doc, scope_rows[0], scope_rows[1], errors)
                if state:
                    check_state(doc, errors)
                if placement:
                    check_placement(doc, placement, errors)
        for e in errors:
            print("%s: %s" % (name, e), file=sys.stderr)
        if errors:
            failed += 1
        else:
            print("%s: ok (%d results%s)" % (name, len(doc["results"]),
                                             ", %d aggregate rows over %d runs"
                                             % (len(doc["aggregate"]), doc["repeat"]["runs"])
                                             if "aggregate" in doc else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
