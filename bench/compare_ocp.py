#!/usr/bin/python3
"""Optimal control over the wire beside Crocoddyl: the problems of ../shared/anchors' anchor_ocp
(Crocoddyl 3.0.1's SolverFDDP) solved by torqued's ControlService through the Python client.

    /usr/bin/python3 bench/compare_ocp.py TORQUED [--describe FILE] [--dump FILE]
                                          [--anchor PATH] [--models DIR] [--workers 1,2]
                                          [--repeats 5] [--rounds 5] [--problem NAME|all]

TORQUED is a torqued server binary; for each --workers count the script starts it on loopback
with that many workers and runs anchor_ocp with as many threads. The problems are read from
`anchor_ocp --describe FILE`'s JSON (without --describe, the script runs anchor_ocp --repeats 0
to write it) and built as bench/ocp_bench.cpp builds them: the URDF named there (from --models,
default ../shared/models), registered with a free-flyer root when the base floats; x0 and every
state reference and weight moved from the description's joint layout to the server's
(ModelService.GetModel), joint by joint; the contacts held from knot 0 at their reference
placements; the costs; the solver's thresholds. Each solve starts cold (x0 at every knot, the
quasi-static controls).

--rounds rounds alternate a run of anchor_ocp (--repeats solves per problem, the first
discarded, its median solve time and final figures in its --dump) and torqued's --repeats solves
per problem (the first discarded), each followed by an Echo whose answer carries as many numbers
as the solution. A --dump FILE given stands for anchor_ocp's runs at its thread count (anchor_ocp
is looked up in $ANCHORS_DIR/native, default ~/.cache/torqued-anchors/native, where
../shared/anchors/build.sh puts it). Printed per problem and workers count: the iterations of
each, torqued's final cost over Crocoddyl's, the task frame's distance to its target at the last
knot for each (torqued's from a Kinematics call), the time per iteration of torqued's solve on
the server (solve_seconds, all of the server's compute for the solve) and of Crocoddyl's in
process, their ratio per round, and the whole call in the client over the server's compute plus
the Echo; medians over the rounds with their ranges.

The script installs the Python client into a temporary venv first, as
tests/clients/python/run_pytest.sh does.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import client_venv  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "..", "shared", "models")
# Crocoddyl's SolverFDDP settings that SolveRequest has no field for: reg_decfactor is
# reg_incfactor there, so a description with others cannot be reproduced.


class Server:
    """The torqued binary on loopback with `workers` workers, a data directory of its own and the
    `flags` given."""

    def __init__(self, binary, workers, flags=()):
        import torqued
        from service_scenarios import free_port

        self.port = free_port()
        self.data = tempfile.mkdtemp(prefix="torqued-ocp-data-")
        self.log = open(os.path.join(self.data, "torqued.log"), "w+")
        self.process = subprocess.Popen(
            [binary, "--address=127.0.0.1", f"--port={self.port}", "--metrics-port=0",
             f"--data-dir={self.data}/store", f"--model-repository={ROOT}/deploy/models",
             f"--workers={workers}", *flags],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        with torqued.Client(self.address, retries=0) as probe:
            while time.monotonic() < deadline and self.process.poll() is None:
                try:
                    if probe.health(timeout=1.0) == "SERVING":
                        return
                except torqued.Error:
                    pass
                time.sleep(0.05)
        self.log.seek(0)
        log = self.log.read()
        self.stop()
        raise RuntimeError("torqued did not start:\n" + log)

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=60)
        self.log.close()
        shutil.rmtree(self.data, ignore_errors=True)


def crocoddyl_runs(anchor, models, threads, repeats, problem):
    """anchor_ocp's --dump for `threads` threads: its problems by name."""
    with tempfile.NamedTemporaryFile(suffix=".json") as dump:
        subprocess.run([anchor, "--threads", str(threads), "--repeats", str(repeats),
                        "--problem", problem, "--models", models, "--dump", dump.name],
                       check=True, capture_output=True)
        return {p["name"]: p for p in json.load(open(dump.name))["problems"]}


class Layout:
    """The description's joint layout against the server's, joint by joint (ocp_bench.cpp's
    state_of): where each of its q and v coordinates goes in the model's."""

    def __init__(self, model, described):
        ours = {joint.name: joint for joint in model.joints}
        self.nq, self.nv = model.nq, model.nv
        self.described_nq = described["nq"]
        self.q_at, self.v_at = [0] * described["nq"], [0] * described["nv"]
        for joint in described["joints"]:
            if joint["name"] not in ours:
                raise SystemExit(f"{model.name}: no joint named {joint['name']}")
            mine = ours[joint["name"]]
            for k in range(joint["nq"]):
                self.q_at[joint["idx_q"] + k] = mine.idx_q + k
            for k in range(joint["nv"]):
                self.v_at[joint["idx_v"] + k] = mine.idx_v + k
        self.root_dofs = 6 if described["base"] == "floating" else 0

    def state(self, x):
        """x = (q, v) in the model's layout."""
        out = [0.0] * (self.nq + self.nv)
        for k, at in enumerate(self.q_at):
            out[at] = x[k]
        for k, at in enumerate(self.v_at):
            out[self.nq + at] = x[self.described_nq + k]
        return out

    def tangent(self, values):
        """A tangent vector (dq, dv), 2 nv values such as a state residual's weights."""
        nv = len(self.v_at)
        out = [0.0] * (2 * self.nv)
        for k, at in enumerate(self.v_at):
            out[at] = values[k]
            out[self.nv + at] = values[nv + k]
        return out

    def control(self, values):
        """Controls: the actuated DOFs, those past the root's in v's order."""
        out = [0.0] * (self.nv - self.root_dofs)
        for k, at in enumerate(self.v_at[self.root_dofs:]):
            out[at - self.root_dofs] = values[k]
        return out


def problem_of(client, described, models):
    """The OptimalControlProblem of a described problem, its model and its layout."""
    import numpy as np

    import torqued

    floating = described["base"] == "floating"
    model = client.register(urdf=Path(models) / Path(described["model"]).name,
                            floating_base=floating)
    layout = Layout(model, described)
    x0 = layout.state(described["x0"])
    problem = torqued.OptimalControlProblem(model, x0[:model.nq], x0[model.nq:],
                                            knots=described["K"], dt=described["dt"])
    problem.actuation("unactuated_root" if floating else "all")
    if described["contacts"]:
        contacts = []
        for c in described["contacts"]:
            if any(c["baumgarte_gains"]):
                raise SystemExit(f"{described['name']}: contacts with Baumgarte's gains")
            anchor = c["reference_placement"]
            contacts.append(torqued.contact(
                c["frame"], "point" if c["type"] == "ContactModel3D" else "weld",
                translation=anchor["translation"], rotation=np.array(anchor["rotation_rows"])))
        problem.add_phase(0, contacts)
    for add, terms in ((problem.add_running_cost, described["running_costs"]),
                       (problem.add_terminal_cost, described["terminal_costs"])):
        for term in terms:
            residual, activation = term["residual"], term["activation"]
            reference = residual.get("reference")
            kind = residual["type"]
            if kind == "frame_translation":
                made = torqued.residuals.frame_translation(residual["frame"], reference)
            elif kind == "state":
                made = torqued.residuals.state(layout.state(reference))
            elif kind == "control":
                made = torqued.residuals.control(layout.control(reference))
            elif kind == "control_gravity":
                made = torqued.residuals.control_gravity()
            elif kind == "com_position":
                made = torqued.residuals.center_of_mass(reference)
            else:
                raise SystemExit(f"{described['name']}: unknown residual {kind}")
            if activation["type"] == "quad":
                weighed = torqued.activations.quadratic()
            elif activation["type"] == "weighted_quad":
                weights = activation["weights"]
                if kind == "state":
                    weights = layout.tangent(weights)
                weighed = torqued.activations.weighted_quadratic(weights)
            else:
                raise SystemExit(f"{described['name']}: unknown activation {activation['type']}")
            add(term["name"], made, weighed, weight=term["weight"])
    solver = described["solver"]
    if solver["reg_decfactor"] != solver["reg_incfactor"]:
        print(f"warning: {described['name']}: reg_decfactor {solver['reg_decfactor']} is not "
              f"reg_incfactor {solver['reg_incfactor']}; the server takes one factor")
    problem.solver(max_iterations=solver["maxiter"], stop_threshold=solver["th_stop"],
                   initial_regularization=solver["reg_min"],
                   min_regularization=solver["reg_min"], max_regularization=solver["reg_max"],
                   regularization_factor=solver["reg_incfactor"],
                   accept_ratio=solver["th_acceptstep"],
                   accept_gap_ratio=solver["th_acceptnegstep"],
                   gradient_threshold=solver["th_grad"], decrease_above=solver["th_stepdec"],
                   increase_at_most=solver["th_stepinc"])
    return problem, model


def torqued_runs(client, problem, model, described, repeats):
    """Solves the problem `repeats` times from the same cold start (the first discarded when more
    than one): the last solution, its task error, the median server and client seconds, and the
    median seconds of an Echo answering the solution's bytes."""
    import numpy as np

    server_seconds, client_seconds, echo_seconds = [], [], []
    for _ in range(repeats):
        start = time.perf_counter()
        solution = client.solve(problem, timeout=600)
        client_seconds.append(time.perf_counter() - start)
        server_seconds.append(solution.solve_seconds)
        start = time.perf_counter()
        client.echo(response_values=answer_values(solution), timeout=600)
        echo_seconds.append(time.perf_counter() - start)
    if repeats > 1:
        del server_seconds[0], client_seconds[0], echo_seconds[0]
    task = described["task"]
    reached = client.kinematics(model.id, solution.q[-1], frames=[task["frame"]]).positions[0]
    return {"solution": solution,
            "task_error": float(np.linalg.norm(reached - np.array(task["target"]))),
            "server_seconds": statistics.median(server_seconds),
            "client_seconds": statistics.median(client_seconds),
            "echo_seconds": statistics.median(echo_seconds)}


def answer_values(solution):
    """The numbers a SolveResponse carries: an Echo answering as many carries as many bytes."""
    gains = 0 if solution.feedback is None else solution.feedback.size
    return (solution.q.size + solution.v.size + solution.u.size + gains
            + 5 * len(solution.iterations) + len(solution.cost_terms) + 3)


def spread(values):
    """A list of figures as its median and range."""
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def run(a):
    import torqued

    sys.path.insert(0, os.path.join(ROOT, "bench"))
    if a.describe is None:
        with tempfile.TemporaryDirectory(prefix="torqued-ocp-") as scratch:
            path = os.path.join(scratch, "describe.json")
            subprocess.run([a.anchor, "--repeats", "0", "--models", a.models, "--describe", path],
                           check=True, capture_output=True)
            description = json.load(open(path))
    else:
        description = json.load(open(a.describe))
    problems = [p for p in description["problems"] if a.problem in ("all", p["name"])]
    dump = json.load(open(a.dump)) if a.dump else None
    print("| problem | workers / threads | iterations (torqued, Crocoddyl) | stop (torqued) "
          "| cost torqued / Crocoddyl | task error torqued, Crocoddyl (m) "
          "| torqued ms/iter, server | Crocoddyl ms/iter | server / Crocoddyl "
          "| end to end / (server + Echo) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for workers in a.workers:
        server = Server(a.binary, workers)
        try:
            with torqued.Client(server.address, timeout=600) as client:
                built = {p["name"]: problem_of(client, p, a.models) for p in problems}
                # Rounds alternate Crocoddyl's runs and torqued's, so that a drift of the machine
                # hits both alike.
                rounds = {p["name"]: [] for p in problems}
                for _ in range(a.rounds):
                    if dump is not None and dump["threads"] == workers:
                        theirs = {p["name"]: p for p in dump["problems"]}
                    else:
                        theirs = crocoddyl_runs(a.anchor, a.models, workers, a.repeats, a.problem)
                    for described in problems:
                        problem, model = built[described["name"]]
                        ours = torqued_runs(client, problem, model, described, a.repeats)
                        rounds[described["name"]].append((ours, theirs[described["name"]]))
                for described in problems:
                    runs = rounds[described["name"]]
                    ours, crocoddyl = runs[-1]
                    solution = ours["solution"]
                    iterations = max(len(solution.iterations), 1)
                    theirs_iterations = max(crocoddyl["iterations"], 1)
                    server_ms = [o["server_seconds"] * 1e3 / iterations for o, _ in runs]
                    crocoddyl_ms = [c["median_ms"] / theirs_iterations for _, c in runs]
                    ratios = [mine / theirs for mine, theirs in zip(server_ms, crocoddyl_ms)]
                    wire = [o["client_seconds"] / (o["server_seconds"] + o["echo_seconds"])
                            for o, _ in runs]
                    print(f"| {described['name']} | {workers} "
                          f"| {len(solution.iterations)}, {crocoddyl['iterations']} "
                          f"| {solution.stop_reason} "
                          f"| {solution.cost / crocoddyl['cost']:.12f} "
                          f"| {ours['task_error']:.2e}, {crocoddyl['task_error']:.2e} "
                          f"| {spread(server_ms)} | {spread(crocoddyl_ms)} | {spread(ratios)} "
                          f"| {spread(wire)} |", flush=True)
        finally:
            server.stop()
    print(f"\n{a.rounds} rounds alternating Crocoddyl's runs and torqued's, each the median of "
          f"{a.repeats} solves from the same cold start"
          f"{' (the first discarded)' if a.repeats > 1 else ''}: medians over the rounds (range); "
          "client and server share the machine's CPUs")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary", help="the torqued server binary")
    ap.add_argument("--describe", help="anchor_ocp --describe's JSON; default: written now")
    ap.add_argument("--dump", help="anchor_ocp --dump's JSON, for its thread count")
    ap.add_argument("--anchor", default=os.path.join(
        os.environ.get("ANCHORS_DIR", os.path.expanduser("~/.cache/torqued-anchors")),
        "native", "anchor_ocp"))
    ap.add_argument("--models", default=MODELS)
    ap.add_argument("--workers", default="1,2",
                    type=lambda text: [int(w) for w in text.split(",")])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--problem", default="all")
    ap.add_argument("--in-venv", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if not a.in_venv:
        sys.exit(client_venv.rerun_in_venv(__file__, sys.argv[1:]))
    a.binary = os.path.abspath(a.binary)
    a.models = os.path.abspath(a.models)
    run(a)


if __name__ == "__main__":
    main()
