#!/usr/bin/env python3
"""Linearize's engine work per knot beside Pinocchio's, in one run: torqued_horizon against
../shared/anchors' anchor_horizon (the semi-implicit Euler step x+, Fx, Fu of a trajectory
optimizer), free and with the legged robots' feet in rigid contact.

    python3 bench/compare_horizon.py TORQUED_HORIZON [--anchor PATH] [--repeats 5]
                                     [--seconds 0.5] [--threads 1,2]

Each repeat runs both programs once per row, in alternating order, so that a shared machine's
drifts hit both alike; the table gives the medians over the repeats of step_linearization (ns
per knot) and torqued / Pinocchio per row. A second table gives, for the rows in contact,
torqued's contact schedules from the same runs (Pinocchio has none to time): a touchdown at every
knot, a trot's knots (phases of 10 knots on alternate halves of the contacts, each beginning
with a touchdown), and what a touchdown adds to a knot against the dynamics derivatives alone. anchor_horizon is looked up in $ANCHORS_DIR/native
(default ~/.cache/torqued-anchors/native, where ../shared/anchors/build.sh puts it).
"""
import argparse
import os
import re
import statistics
import subprocess

here = os.path.dirname(os.path.abspath(__file__))
models = os.path.join(os.path.dirname(os.path.dirname(here)), "shared", "models")
# (model, base, contact frames, contact type): the rows of the trajectory-optimization issue.
SOLO12_FEET = "FL_FOOT,FR_FOOT,HL_FOOT,HR_FOOT"
TALOS_SOLES = "left_sole_link,right_sole_link"
ROWS = [("ur5", "fixed", "", ""), ("panda", "fixed", "", ""), ("solo12", "floating", "", ""),
        ("solo12", "floating", SOLO12_FEET, "3d"), ("talos_reduced", "floating", "", ""),
        ("talos_reduced", "floating", TALOS_SOLES, "6d")]


def step_ns(exe, urdf, base, contacts, contact_type, threads, seconds):
    """The program's rows, ns per knot, by name."""
    command = [exe, "--urdf", urdf, "--base", base, "--threads", str(threads),
               "--seconds", str(seconds)]
    if contacts:
        command += ["--contacts", contacts, "--contact-type", contact_type]
    out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return {name: float(ns) for name, ns in re.findall(r"^(\w+)\s+(\S+) ns/knot", out, re.M)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("torqued")
    default_anchor = os.path.join(
        os.environ.get("ANCHORS_DIR", os.path.expanduser("~/.cache/torqued-anchors")),
        "native", "anchor_horizon")
    ap.add_argument("--anchor", default=default_anchor)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=0.5)
    ap.add_argument("--threads", default="1,2")
    a = ap.parse_args()
    threads = [int(t) for t in a.threads.split(",")]
    samples = {}
    for repeat in range(a.repeats):
        for row in ROWS:
            name, base, contacts, contact_type = row
            urdf = os.path.join(models, name + ".urdf")
            for t in threads:
                programs = [("pinocchio", a.anchor), ("torqued", a.torqued)]
                for who, exe in programs if repeat % 2 == 0 else reversed(programs):
                    samples.setdefault((row, t, who), []).append(
                        step_ns(exe, urdf, base, contacts, contact_type, t, a.seconds))
    def median(row, t, who, name):
        return statistics.median(s[name] for s in samples[(row, t, who)])

    print("| model | base | contacts | threads | Pinocchio (ns/knot) | torqued (ns/knot) "
          "| torqued / Pinocchio |")
    print("|---|---|---|---|---|---|---|")
    worst = 0.0
    held = {}
    for row in ROWS:
        name, base, contacts, contact_type = row
        held[row] = f"{len(contacts.split(','))} x {contact_type}" if contacts else "free"
        for t in threads:
            pin = median(row, t, "pinocchio", "step_linearization")
            ours = median(row, t, "torqued", "step_linearization")
            worst = max(worst, ours / pin)
            print(f"| {name} | {base} | {held[row]} | {t} | {pin:.0f} | {ours:.0f} "
                  f"| {ours / pin:.3f} |")
    print(f"\nworst torqued / Pinocchio: {worst:.3f} (medians of {a.repeats} repeats, alternating)")
    print("\n| model | contacts | threads | one phase (ns/knot) | trot (ns/knot) "
          "| touchdown (ns/knot) | touchdown − one phase | dynamics derivatives |")
    print("|---|---|---|---|---|---|---|---|")
    for row in ROWS:
        if not row[2]:
            continue
        for t in threads:
            one, trot, touchdown, derivatives = (
                median(row, t, "torqued", name)
                for name in ("step_linearization", "trot_step_linearization",
                             "touchdown_step_linearization", "constraint_dynamics_derivatives"))
            print(f"| {row[0]} | {held[row]} | {t} | {one:.0f} | {trot:.0f} | {touchdown:.0f} "
                  f"| {touchdown - one:.0f} | {derivatives:.0f} |")


if __name__ == "__main__":
    main()
