#!/usr/bin/env python3
"""ctest scripts.report_plots: scripts/report-plots.py on committed H200 results.

usage: test-report-plots.py WORKDIR   (WORKDIR is emptied first)

Fails when matplotlib is not importable (scripts/install-deps.sh installs
it). Checks that
  1. the figures the committed results make are written, each a PNG (its
     signature, an IHDR of at least 600 x 400, an IEND) of at least 20 KB,
     and that the figures without data (Figures 5 and 11) are reported
     with the rows they need;
  2. a figure whose rows are absent from the input is reported as not
     drawn, naming the rows, and no file is written for it;
  3. bad input is refused (exit 2) with a message naming the file and the
     row: a truncated JSON, a row without p50, a CSV row with a p50 that
     is not a number;
  4. without matplotlib the script skips (exit 0, for `gic suite`), and
     with --require-matplotlib fails (exit 1) naming install-deps.sh;
  5. the `gic suite` form (results.json DIR) appends the figures to
     DIR/report.md.
"""
import csv
import json
import os
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SCRIPT = os.path.join(HERE, "report-plots.py")
METHOD = os.path.join(ROOT, "results", "2026-12-01-h200-suite-method")
INPUTS = [os.path.join(METHOD, f) for f in
          ("sweep.json", "scope.json", "rate.json", "t14.csv", "f9b.csv")] + \
         [os.path.join(ROOT, "results", "2026-12-01-h200-proxy", "f7_sweep.json"),
          os.path.join(ROOT, "results", "2026-11-30-h200x2", "nvshmem", "loaded.json")]
EXPECTED = ("fig3a-inline-latency.png", "fig4-completion-scope.png", "fig6-loaded-rtt.png",
            "fig7-proxy-rate.png", "fig9-dormant-loss.png", "table5-rate.png")
ABSENT = {"fig5-sm-clock.png": "two or more SM clocks",
          "fig11-put-completion-vs-size.png": "two or more payload sizes"}

failures = []
checks = []


def check(ok, what, detail=""):
    checks.append(what)
    print("%s: %s" % ("PASS" if ok else "FAIL", what))
    if not ok:
        failures.append(what)
        if detail:
            print("  " + detail.strip().replace("\n", "\n  "))
    return ok


def run(args, env=None):
    p = subprocess.run([sys.executable, SCRIPT] + args, capture_output=True, text=True,
                       env=env, timeout=240)
    return p.returncode, p.stdout + p.stderr


def png_size(path):
    """(width, height) of a well-formed PNG, else None."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR" or data[-8:-4] != b"IEND":
        return None
    return struct.unpack(">II", data[16:24])


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    work = argv[1]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    try:
        import matplotlib  # noqa: F401
    except ImportError as e:
        print("FAIL: matplotlib is not installed for %s (%s): run scripts/install-deps.sh"
              % (sys.executable, e))
        return 1

    # 1. Figures from committed results.
    out = os.path.join(work, "figures")
    rc, text = run(["--require-matplotlib"] + INPUTS + [out])
    check(rc == 0, "report-plots.py on committed results exits 0 (got %d)" % rc, text)
    for name in EXPECTED:
        path = os.path.join(out, name)
        size = png_size(path) if os.path.exists(path) else None
        check(size is not None and size[0] >= 600 and size[1] >= 400 and
              os.path.getsize(path) >= 20000,
              "%s written, a PNG of %s, %s bytes" % (
                  name, "x".join(map(str, size)) if size else "no valid header",
                  os.path.getsize(path) if os.path.exists(path) else "no"), text)
        check("wrote %s" % path in text, "%s listed in the output" % name, text)
    for name, why in ABSENT.items():
        lines = [l for l in text.splitlines() if "not drawn: %s" % name in l]
        check(len(lines) == 1 and why in lines[0], "%s reported not drawn, needing %s"
              % (name, why), text)
        check(not os.path.exists(os.path.join(out, name)), "no %s written" % name)

    # 2. A figure whose rows are absent.
    out2 = os.path.join(work, "absent")
    rc, text = run(["--only", "fig3a,table5", os.path.join(METHOD, "sweep.json"), out2])
    check(rc == 0 and os.path.exists(os.path.join(out2, "fig3a-inline-latency.png")),
          "fig3a drawn from sweep.json alone", text)
    line = [l for l in text.splitlines() if "not drawn: table5-rate.png" in l]
    check(len(line) == 1 and "experiment rate" in line[0] and "message rate" in line[0],
          "table5 reported not drawn, naming the rate rows it needs", text)
    check(not os.path.exists(os.path.join(out2, "table5-rate.png")), "no table5-rate.png written")

    # 3. Bad input, named with its file and row.
    with open(os.path.join(METHOD, "scope.json")) as f:
        good = f.read()
    truncated = os.path.join(work, "truncated.json")
    with open(truncated, "w") as f:
        f.write(good[: len(good) // 2])
    rc, text = run([truncated, os.path.join(work, "bad")])
    check(rc == 2 and truncated in text and "not valid JSON" in text and "line" in text,
          "a truncated JSON is refused with its file and position", text)
    doc = json.loads(good)
    del doc["results"][1]["p50"]
    nop50 = os.path.join(work, "no-p50.json")
    with open(nop50, "w") as f:
        json.dump(doc, f)
    rc, text = run([nop50, os.path.join(work, "bad")])
    name = doc["results"][1]["name"]
    check(rc == 2 and nop50 in text and "results[1]" in text and name in text and
          "missing field 'p50'" in text,
          "a row without p50 is refused, naming the file, results[1] and its name", text)
    with open(os.path.join(METHOD, "t14.csv"), newline="") as f:
        table = list(csv.reader(f))
    table[3][table[0].index("p50")] = "4O"  # the third row: line 4 of the file
    badcsv = os.path.join(work, "bad-p50.csv")
    with open(badcsv, "w", newline="") as f:
        csv.writer(f).writerows(table)
    rc, text = run([badcsv, os.path.join(work, "bad")])
    check(rc == 2 and badcsv in text and "line 4" in text and "'p50'" in text and "4O" in text,
          "a CSV row with p50 '4O' is refused, naming the file and line 4", text)
    check(not os.path.exists(os.path.join(work, "bad")), "no output directory for bad input")

    # 3b. The host analogue's loaded rows count background threads (bg=, not
    # bg_ctas=): fig6 draws them (gic suite --host failed here before).
    with open(INPUTS[-1]) as f:
        doc = json.load(f)
    for r in doc["results"]:
        r["params"] = r.get("params", "").replace("bg_ctas=", "bg=")
    hostbg = os.path.join(work, "host-bg.json")
    with open(hostbg, "w") as f:
        json.dump(doc, f)
    out3 = os.path.join(work, "host-bg")
    rc, text = run(["--only", "fig6", hostbg, out3])
    check(rc == 0 and os.path.exists(os.path.join(out3, "fig6-loaded-rtt.png")),
          "fig6 drawn from loaded rows whose params give bg= (the host analogue)", text)

    # 4. Without matplotlib (a stub package that fails to import).
    stub = os.path.join(work, "no-matplotlib", "matplotlib")
    os.makedirs(stub)
    with open(os.path.join(stub, "__init__.py"), "w") as f:
        f.write("raise ImportError('hidden by test-report-plots.py')\n")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(stub))
    rc, text = run([os.path.join(METHOD, "sweep.json"), os.path.join(work, "skip")], env)
    check(rc == 0 and "matplotlib not installed: skipping" in text,
          "without matplotlib: skip message, exit 0 (gic suite's use)", text)
    rc, text = run(["--require-matplotlib", os.path.join(METHOD, "sweep.json"),
                    os.path.join(work, "skip")], env)
    check(rc == 1 and "install-deps.sh" in text,
          "without matplotlib, --require-matplotlib: exit 1 naming install-deps.sh", text)

    # 5. The suite's form: DIR/results.json DIR, with DIR/report.md.
    suite = os.path.join(work, "suite")
    os.makedirs(suite)
    shutil.copy(os.path.join(METHOD, "suite-repeat3.json"), os.path.join(suite, "results.json"))
    with open(os.path.join(suite, "report.md"), "w") as f:
        f.write("# gic suite\n")
    rc, text = run([os.path.join(suite, "results.json"), suite])
    with open(os.path.join(suite, "report.md")) as f:
        report = f.read()
    check(rc == 0 and "## The paper's figures" in report and
          "](table3-4-single-op.png)" in report and "not drawn: fig5-sm-clock.png" in report,
          "the suite's form appends the figures and the ones not drawn to report.md", text)

    print("%d passed, %d failed" % (len(checks) - len(failures), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
