#!/usr/bin/env python3
"""Checks gic result files (gic <sub> --json FILE) against a JSON Schema.

usage: check-results.py [--schema SCHEMA] FILE...

Implements the subset of JSON Schema (draft 2020-12) that
bench/gic/result.schema.json uses: type (a name or a list of names),
required, properties, items, enum, minimum. Then checks every result:
validated is true, min <= p50 <= p99 <= max. Python standard library only.
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


def check_results(doc, errors):
    """The checks beyond the schema: validation and ordered statistics."""
    results = doc.get("results", []) if isinstance(doc, dict) else []
    if not results:
        errors.append("results: empty")
    for i, r in enumerate(results):
        where = "results[%d] (%s / %s / %s)" % (i, r.get("experiment"), r.get("name"),
                                                r.get("metric"))
        if r.get("validated") is not True:
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
    i = 1
    while i < len(argv):
        if argv[i] == "--schema" and i + 1 < len(argv):
            schema_path = argv[i + 1]
            i += 2
        elif argv[i].startswith("-"):
            print("check-results.py: unknown flag %r" % argv[i], file=sys.stderr)
            return 2
        else:
            files.append(argv[i])
            i += 1
    if not files:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
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
            check_results(doc, errors)
        for e in errors:
            print("%s: %s" % (name, e), file=sys.stderr)
        if errors:
            failed += 1
        else:
            print("%s: ok (%d results)" % (name, len(doc["results"])))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
