#!/usr/bin/env python3
"""The tests a stage of tests/run.sh skipped, with their reasons, for the list the command prints
at its end; and whether one of them hides a check that must run.

Usage: skipped_tests.py STAGE SHARED_DIR SUMMARY REPORT...

REPORT is CTest's JUnit report of the stage (ctest --output-junit: the output of every test, in
which GoogleTest prints "[  SKIPPED ]" and the message of each GTEST_SKIP, and pytest, run with
-ra, a "SKIPPED [n] file:line: reason" line per reason), or a plain log of pytest's output. Each
skip is appended to SUMMARY as "STAGE  test: reason". The reference data of ../shared (SHARED_DIR)
is absent from a user's clone, and the tests reading it skip there with a message naming it
("../shared", "the shared reference material", or a path under SHARED_DIR). CI runs with it: a
skip of such a test when SHARED_DIR exists, or anywhere with CI=true in the environment (as CI
sets it), exits 1.
"""
import os
import re
import sys
import xml.etree.ElementTree as ElementTree

GTEST_RUN = re.compile(r"^\[ RUN      \] (\S+)$")
GTEST_SKIPPED = re.compile(r"^\[  SKIPPED \] (\S+) \(\d+ ms\)$")
PYTEST_SKIPPED = re.compile(r"^SKIPPED \[(\d+)\] (\S+?:\d+): (.*)$")


def skips_in_output(text):
    """(test, reason) of each skip GoogleTest or pytest printed in `text`."""
    skips = []
    running, lines = None, []
    for line in text.splitlines():
        if match := GTEST_RUN.match(line):
            running, lines = match.group(1), []
        elif match := GTEST_SKIPPED.match(line):
            # GoogleTest prints "file:line: Skipped" and then the message.
            message = lines
            for i, earlier in enumerate(lines):
                if earlier.endswith(": Skipped"):
                    message = lines[i + 1:]
            skips.append((match.group(1), " ".join(l.strip() for l in message if l.strip())))
            running = None
        elif match := PYTEST_SKIPPED.match(line):
            count = int(match.group(1))
            where = match.group(2) + (f" ({count} tests)" if count > 1 else "")
            skips.append((where, match.group(3)))
        elif running is not None:
            lines.append(line)
    return skips


def skips_in_report(path):
    """The skips of a JUnit report of CTest, or of a plain log."""
    with open(path, encoding="utf-8", errors="replace") as report:
        text = report.read()
    if not text.lstrip().startswith("<?xml") and not text.lstrip().startswith("<testsuite"):
        return skips_in_output(text)
    skips = []
    for case in ElementTree.fromstring(text).iter("testcase"):
        output = case.findtext("system-out") or ""
        found = skips_in_output(output)
        if not found and (case.get("status") in ("skipped", "notrun") or
                          case.find("skipped") is not None):
            found = [(case.get("name"), "(CTest: skipped; no reason printed)")]
        skips += found
    return skips


def needs_shared(reason, shared_dir):
    return ("../shared" in reason or "shared reference" in reason or
            os.path.realpath(shared_dir) in reason)


def main():
    stage, shared_dir, summary = sys.argv[1:4]
    skips = [skip for report in sys.argv[4:] if os.path.exists(report)
             for skip in skips_in_report(report)]
    must_run = os.path.isdir(shared_dir) or os.environ.get("CI") == "true"
    hidden = [(test, reason) for test, reason in skips
              if must_run and needs_shared(reason, shared_dir)]
    with open(summary, "a", encoding="utf-8") as out:
        for test, reason in skips:
            mark = "  (must run: " + ("../shared is here" if os.path.isdir(shared_dir)
                                      else "CI=true") + ")" if (test, reason) in hidden else ""
            out.write(f"{stage}  {test}: {reason}{mark}\n")
    if hidden:
        why = (f"{shared_dir} exists" if os.path.isdir(shared_dir) else
               "CI=true, where ../shared must be beside the clone")
        print(f"{len(hidden)} skips of the {stage} stage hide checks of ../shared, "
              f"but {why}:", file=sys.stderr)
        for test, reason in hidden:
            print(f"  {test}: {reason}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
