#!/usr/bin/env python3
"""Two torqued_bench builds side by side, on compare.py's models and algorithms, in one run.

    python3 bench/compare_builds.py BASE_BENCH CHANGED_BENCH [--repeats 5] [--seconds 0.5]

Each repeat times both builds once per model, in alternating order, so that a shared machine's
drifts hit both alike; the table gives the medians over the repeats (ns per call) and
CHANGED / BASE per row. A change that must not cost speed keeps every row within its bound (see
docs/benchmarks.md). Needs ../shared/models beside the repository.
"""
import argparse
import os
import statistics
import sys

here = os.path.dirname(os.path.abspath(__file__))
anchors = os.path.join(os.path.dirname(os.path.dirname(here)), "shared", "anchors")
sys.path.insert(0, anchors)
import compare  # noqa: E402  (../shared/anchors/compare.py: its models and its torqued_bench runner)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base")
    ap.add_argument("changed")
    ap.add_argument("--algos", default=",".join(compare.LABEL))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=0.5)
    a = ap.parse_args()
    algos = a.algos.split(",")
    samples = {}
    for repeat in range(a.repeats):
        for name, urdf, floating in compare.CASES:
            path = os.path.join(compare.models, urdf)
            builds = [("base", a.base), ("changed", a.changed)]
            for build, exe in builds if repeat % 2 == 0 else reversed(builds):
                for algo, ns in compare.torqued(exe, path, floating, algos, a.seconds).items():
                    samples.setdefault((name, algo, build), []).append(ns)
    print("| model | algorithm | base (ns) | changed (ns) | changed / base |")
    print("|---|---|---|---|---|")
    worst = 0.0
    for name, _, _ in compare.CASES:
        for algo in algos:
            base = statistics.median(samples.get((name, algo, "base"), [float("nan")]))
            changed = statistics.median(samples.get((name, algo, "changed"), [float("nan")]))
            worst = max(worst, changed / base)
            print(f"| {name} | {algo} | {base:.0f} | {changed:.0f} | {changed / base:.3f} |")
    print(f"\nworst changed / base: {worst:.3f} (medians of {a.repeats} repeats, alternating)")


if __name__ == "__main__":
    main()
