#!/usr/bin/python3
"""Runs rdma-core's own tests (Debian's python3-pyverbs ships them) against
the emulated device, and checks a pass list.

Usage: emu-pyverbs.py --work DIR --pass-list FILE [--report FILE] MODULE...

Copies /usr/share/doc/rdma-core/tests into DIR/tests (unpacking the .gz
files dh_compress made), runs every test of the named modules (test_device
and so on) with unittest, and writes one line per test to the report:
"<id> ok", "<id> skipped: <reason>", "<id> FAIL: <first line>" or
"<id> ERROR: <last line>". Exit status 1 when a test of the pass list
(one test id a line, '#' comments) did not pass or did not run; 0 otherwise.
Run it with the system's python3 (pyverbs is built for it) and with
LD_LIBRARY_PATH pointing at the emulated libraries.
"""
import argparse
import gzip
import os
import shutil
import sys
import unittest

SRC = '/usr/share/doc/rdma-core/tests'


def unpack(work):
    dst = os.path.join(work, 'tests')
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    for name in os.listdir(SRC):
        path = os.path.join(SRC, name)
        if name.endswith('.gz'):
            with gzip.open(path, 'rb') as f, open(os.path.join(dst, name[:-3]), 'wb') as g:
                g.write(f.read())
        elif os.path.isfile(path):
            shutil.copy(path, dst)
    return work


class Recorder(unittest.TextTestResult):
    """Keeps each test's outcome by id."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.outcome = {}

    def addSuccess(self, t):
        super().addSuccess(t)
        self.outcome[t.id()] = 'ok'

    def addSkip(self, t, reason):
        super().addSkip(t, reason)
        self.outcome[t.id()] = 'skipped: ' + ' '.join(str(reason).split())

    def addFailure(self, t, err):
        super().addFailure(t, err)
        self.outcome[t.id()] = 'FAIL: ' + str(err[1]).splitlines()[0][:200]

    def addError(self, t, err):
        super().addError(t, err)
        self.outcome[t.id()] = 'ERROR: ' + (str(err[1]).splitlines() or [''])[-1][:200]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--work', required=True)
    ap.add_argument('--pass-list', required=True)
    ap.add_argument('--report')
    ap.add_argument('modules', nargs='+')
    args = ap.parse_args()
    if not os.path.isdir(SRC):
        sys.exit(f'emu-pyverbs: {SRC} missing: install python3-pyverbs')
    work = unpack(args.work)
    sys.path[:0] = [work, os.path.join(work, 'tests')]  # as run_tests.py runs them
    sys.argv = sys.argv[:1]  # the tests' own argument parser reads sys.argv
    import tests  # noqa: E402 (the unpacked package)
    from args_parser import parser  # noqa: E402
    parser.parse_args()  # as run_tests.py does: the tests read its config
    suite = unittest.TestSuite()
    loader = unittest.TestLoader()
    for m in args.modules:
        suite.addTests(loader.loadTestsFromName('tests.' + m))
    runner = unittest.TextTestRunner(resultclass=Recorder, verbosity=0, stream=sys.stderr)
    result = runner.run(suite)
    lines = [f'{k} {v}' for k, v in sorted(result.outcome.items())]
    if args.report:
        with open(args.report, 'w') as f:
            f.write('\n'.join(lines) + '\n')
    want = [l.split('#')[0].strip() for l in open(args.pass_list)]
    want = [w for w in want if w]
    bad = [f'{w}: {result.outcome.get(w, "did not run")}' for w in want
           if result.outcome.get(w) != 'ok']
    passed = sum(1 for v in result.outcome.values() if v == 'ok')
    print(f'emu-pyverbs: {len(result.outcome)} tests, {passed} passed; '
          f'pass list {len(want) - len(bad)}/{len(want)}')
    for b in bad:
        print('emu-pyverbs: pass-list test failed:', b)
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
