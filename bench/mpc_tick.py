#!/usr/bin/python3
"""An MPC tick over the wire beside Crocoddyl's in process: a quadruped's trot window, one
warm-started FDDP iteration per tick, on ControlService.Mpc and in Crocoddyl 3.0.1.

    /usr/bin/python3 bench/mpc_tick.py BUILD [--crocoddyl build/crocoddyl/crocoddyl_tick]
                                       [--knots 100] [--workers 1,2] [--rounds 5]
                                       [--seconds 5]

BUILD is a torqued build directory (its server/torqued and clients/cpp/load/torqued-load); the
Crocoddyl side is bench/crocoddyl's crocoddyl_tick, built against ../shared/anchors' Crocoddyl
(see bench/crocoddyl/CMakeLists.txt). For each --workers count the script starts the server on
loopback with that many workers (and --max-cost-terms 4096: a 100-knot trot has about 310
terms) and writes the problem: the window of --knots knots from the start of
clients/python/examples/trot.py's trot (the bundled quadruped, 4 cycles, friction cones of μ 0.7
on the stance feet), as MPC re-plans it. Then --rounds rounds alternate, each:
- crocoddyl_tick on as many threads: the window solved cold, then 200 ticks in process, each the
  solution shifted by a knot from the start state and one iteration;
- torqued-load --rpc Mpc for --seconds: one stream stating the window, then ticks in a closed
  loop, each the start state a knot later and one iteration, as the client sees it;
- torqued-load --rpc Mpc --echo for --seconds: a unary Echo carrying a tick's numbers and
  answered with as many as a tick's answer.

Printed per workers count, medians over the rounds with their ranges: Crocoddyl's tick (p50,
p99), torqued's tick (p50, p99), the Echo (p50), and the bar's ratio: torqued's p99 over
Crocoddyl's p50 plus the Echo's p50. Then the median step length the ticks' line searches took,
torqued's from 200 ticks through the Python client: a tick that backtracks rolls the window out
again, so the two solvers' ticks compare only when their steps do.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import client_venv  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUADRUPED = os.path.join(ROOT, "deploy", "models", "quadruped.urdf")


def trot_window(client, knots):
    """The trot's first `knots` knots as a SolveRequest (trot.py's, friction cones on)."""
    sys.path.insert(0, os.path.join(ROOT, "clients", "python", "examples"))
    from trot import add_trot_options, trot_of

    ap = argparse.ArgumentParser()
    add_trot_options(ap, cycles=4)
    options = ap.parse_args(["--model", QUADRUPED])
    trot = trot_of(client, ap, options)
    if knots > trot.gait.knots:
        raise SystemExit(f"--knots: the trot has {trot.gait.knots} knots")
    return trot.problem(first=0, knots=knots, friction=0.7).to_request()


def load_run(load, address, request, seconds, echo):
    """torqued-load's JSON report of Mpc ticks (or their Echo) for `seconds`."""
    with tempfile.NamedTemporaryFile(suffix=".json") as report:
        subprocess.run([load, "--target", address, "--solve-request", request, "--rpc", "Mpc",
                        "--warmup", "1", "--duration", str(seconds), "--json", report.name,
                        *(["--echo"] if echo else [])], check=True, capture_output=True)
        return json.load(open(report.name))


def torqued_steps(client, request, ticks):
    """The median step length of `ticks` ticks as torqued-load sends them, through the client."""
    import numpy as np

    class Stated:
        def to_request(self):
            return request

    steps = []
    with client.mpc(Stated(), timeout=600) as stream:
        for tick in range(1, ticks + 1):
            step = stream.tick(request.q0, request.v0, time=tick * request.dt)
            steps.append(step.solution.iterations[-1].step)
    return float(np.median(steps))


def spread(values):
    """A list of figures as its median and range."""
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def run(a):
    """The table, with the requests written to a directory removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="torqued-mpc-tick-") as work:
        measure(a, work)


def measure(a, work):
    import torqued
    from compare_ocp import Server
    from google.protobuf import json_format

    binary = os.path.join(a.build, "server", "torqued")
    load = os.path.join(a.build, "clients", "cpp", "load", "torqued-load")
    print("| workers / threads | Crocoddyl tick ms p50, p99 | torqued tick ms p50, p99 "
          "| Echo ms p50 | torqued p99 / (Crocoddyl p50 + Echo p50) "
          "| tick step length p50, torqued and Crocoddyl |")
    print("|---|---|---|---|---|---|")
    for workers in a.workers:
        server = Server(binary, workers, ["--max-cost-terms=4096"])
        try:
            with torqued.Client(server.address, timeout=600) as client:
                request = trot_window(client, a.knots)
                step = torqued_steps(client, request, 200)
            path = os.path.join(work, f"trot_{a.knots}.json")
            with open(path, "w") as out:
                out.write(json_format.MessageToJson(request))
            rounds = []
            for _ in range(a.rounds):
                theirs = json.loads(subprocess.run(
                    [a.crocoddyl, "--request", path, "--urdf", QUADRUPED, "--threads",
                     str(workers), "--ticks", "200"],
                    check=True, capture_output=True, text=True).stdout)
                ours = load_run(load, server.address, path, a.seconds, echo=False)
                echo = load_run(load, server.address, path, a.seconds, echo=True)
                if ours["errors"] or echo["errors"]:
                    raise SystemExit(f"torqued-load: errors {ours['codes']} {echo['codes']}")
                rounds.append((theirs["tick_ms"], ours["latency_us"], echo["latency_us"]))
                their_step = theirs["tick_step_p50"]
            ratio = [o["p99"] / 1e3 / (t["p50"] + e["p50"] / 1e3) for t, o, e in rounds]
            print(f"| {workers} | {spread([t['p50'] for t, _, _ in rounds])}, "
                  f"{spread([t['p99'] for t, _, _ in rounds])} "
                  f"| {spread([o['p50'] / 1e3 for _, o, _ in rounds])}, "
                  f"{spread([o['p99'] / 1e3 for _, o, _ in rounds])} "
                  f"| {spread([e['p50'] / 1e3 for _, _, e in rounds])} | {spread(ratio)} "
                  f"| {step:g}, {their_step:g} |", flush=True)
        finally:
            server.stop()
    print(f"\n{a.rounds} rounds alternating Crocoddyl's 200 ticks, {a.seconds} s of torqued's "
          f"and {a.seconds} s of Echo; a {a.knots}-knot trot window ({len(request.running_costs)}"
          f" running terms); medians over the rounds (range); client and server share the "
          "machine's CPUs")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", help="a torqued build directory")
    ap.add_argument("--crocoddyl", default=os.path.join(ROOT, "build", "crocoddyl",
                                                        "crocoddyl_tick"))
    ap.add_argument("--knots", type=int, default=100)
    ap.add_argument("--workers", default="1,2",
                    type=lambda text: [int(w) for w in text.split(",")])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--in-venv", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if not a.in_venv:
        sys.exit(client_venv.rerun_in_venv(__file__, sys.argv[1:]))
    a.build = os.path.abspath(a.build)
    a.crocoddyl = os.path.abspath(a.crocoddyl)
    run(a)


if __name__ == "__main__":
    main()
