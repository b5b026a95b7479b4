#!/usr/bin/python3
"""A trajectory optimizer's horizon over the wire: one Linearize call of K knots of
talos_reduced (floating base, root unactuated, semi-implicit Euler) through the Python client,
against Pinocchio computing the same in process and against an Echo of the same bytes.

    /usr/bin/python3 bench/horizon_end_to_end.py [--build build/dev] [--knots 100] [--rollout]
                                                 [--workers 2] [--repeats 5] [--calls 50]

It installs the Python client into a temporary venv (as tests/clients/python/run_pytest.sh
does), starts torqued on loopback with --workers, and alternates, per repeat:
  - Linearize: the median over --calls calls of the client's linearize(), arrays in and out;
  - Echo: the same request and answer sizes (Client.echo with response_values): the answer
    Linearize sends the client, the v+ rows of Fx and Fu and the free-flyer's blocks of J_q and
    J_w (STEP_JACOBIANS_VELOCITY_ROWS);
  - the client's assembly of Fx and Fu from those (numpy, on arrays of the same shapes);
  - Pinocchio: anchor_horizon --threads WORKERS, step_linearization per knot × K;
  - the engine alone: torqued_horizon --threads WORKERS, step_linearization per knot × K.
It prints the medians, the two ratios the trajectory-optimization issue bounds (Linearize over
Pinocchio, at most 2; Linearize over Echo, at most 1.2) and the split of a call into the
server's compute, the wire (encoding, transfer and decoding: the Echo) and the client's
assembly. Client and server share the machine's CPUs.

With --rollout it also times the client's rollout() on the same model, in the same alternation:
K steps of 1 ms from the first knot at rest, one rollout open loop and six with feedback about
it (a line search's step sizes), each with and without Fx and Fu.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import client_venv  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TALOS = os.path.join(ROOT, "..", "shared", "models", "talos_reduced.urdf")


def step_ns(exe, knots, threads):
    out = subprocess.run([exe, "--urdf", TALOS, "--base", "floating", "--knots", str(knots),
                          "--threads", str(threads), "--seconds", "1"],
                         check=True, capture_output=True, text=True).stdout
    line = next(l for l in out.splitlines() if l.startswith("step_linearization"))
    return float(line.split()[1])


def median_seconds(call, count):
    call()  # warm-up
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def run(a):
    import numpy as np

    import torqued

    sys.path.insert(0, os.path.join(ROOT, "bench"))
    from service_scenarios import Server

    anchor = os.path.join(os.environ.get("ANCHORS_DIR", os.path.expanduser(
        "~/.cache/torqued-anchors")), "native", "anchor_horizon")
    horizon = os.path.join(a.build, "bench", "torqued_horizon")
    data_root = tempfile.mkdtemp(prefix="torqued-horizon-data-")
    server = Server(a.build, a.workers, data_root)
    try:
        # As the server keeps freed memory for reuse, so does this client (an opt-in: see
        # docs/benchmarks.md on page faults).
        with torqued.Client(f"127.0.0.1:{server.port}", keep_freed_memory=True) as client:
            model = client.register(urdf=__import__("pathlib").Path(TALOS), floating_base=True)
            rng = np.random.default_rng(1)
            q = rng.uniform(-1.0, 1.0, (a.knots, model.nq))
            root = next(j for j in model.joints if j.name == "root_joint")
            quaternion = rng.normal(size=(a.knots, 4))
            q[:, root.idx_q + 3:root.idx_q + 7] = quaternion / np.linalg.norm(
                quaternion, axis=1, keepdims=True)
            v = rng.uniform(-1.0, 1.0, (a.knots, model.nv))
            u = rng.uniform(-10.0, 10.0, (a.knots, model.nv - 6))
            nx, nu = 2 * model.nv, model.nv - 6
            sent = q.size + v.size + u.size
            # The client asks for Fx's and Fu's v+ rows and the free-flyer's 6 x 6 blocks of J_q
            # and J_w (StepJacobians in dynamics.proto), and assembles Fx and Fu itself.
            answered = a.knots * (model.nq + model.nv + model.nv * (nx + nu) + 2 * 36)

            def linearize():
                client.linearize(model.id, q, v, u, dt=0.01, actuation="unactuated_root")

            values = np.zeros(sent)

            def echo():
                client.echo(values=values, response_values=answered)

            # The client's part beyond the wire: Fx and Fu from the v+ rows and the blocks.
            free_flyer = types.SimpleNamespace(
                integration_blocks=[types.SimpleNamespace(first_dof=root.idx_v, dofs=6)],
                integrate_dq=rng.uniform(-1.0, 1.0, a.knots * 36),
                integrate_dw=rng.uniform(-1.0, 1.0, a.knots * 36))
            dv_dx = rng.uniform(-1.0, 1.0, (a.knots, model.nv, nx))
            dv_du = rng.uniform(-1.0, 1.0, (a.knots, model.nv, nu))

            def assemble():
                torqued._euler_step_jacobians.euler_step_jacobians(dv_dx, dv_du, free_flyer, 0.01,
                                                                   explicit=False)

            # Rollouts from the first knot at rest; the six of a line search about the first.
            start, rest = q[:1], np.zeros((1, model.nv))
            controls = rng.uniform(-1.0, 1.0, (1, a.knots, nu))
            nominal = client.rollout(model.id, start, rest, controls, dt=1e-3,
                                     actuation="unactuated_root")
            search = {"q_nominal": nominal.q[0, :-1], "v_nominal": nominal.v[0, :-1],
                      "feedback": rng.uniform(-0.01, 0.01, (a.knots, nu, nx))}

            def rollouts(count, jacobians):
                closed_loop = search if count > 1 else {}
                return lambda: client.rollout(
                    model.id, np.repeat(start, count, 0), np.repeat(rest, count, 0),
                    np.repeat(controls, count, 0), dt=1e-3, actuation="unactuated_root",
                    jacobians=jacobians, **closed_loop)

            rollout_rows = {
                "Rollout, 1 rollout, states only": rollouts(1, False),
                "Rollout, 1 rollout, with Fx and Fu": rollouts(1, True),
                "Rollout, 6 rollouts with feedback, states only": rollouts(6, False),
                "Rollout, 6 rollouts with feedback, with Fx and Fu": rollouts(6, True),
            } if a.rollout else {}

            samples = {name: [] for name in ("linearize", "echo", "assemble", "pinocchio",
                                             "engine", *rollout_rows)}
            for repeat in range(a.repeats):
                steps = [
                    ("linearize", lambda: median_seconds(linearize, a.calls)),
                    ("echo", lambda: median_seconds(echo, a.calls)),
                    ("assemble", lambda: median_seconds(assemble, a.calls)),
                    ("pinocchio", lambda: step_ns(anchor, a.knots, a.workers) * a.knots * 1e-9),
                    ("engine", lambda: step_ns(horizon, a.knots, a.workers) * a.knots * 1e-9),
                ] + [(name, lambda call=call: median_seconds(call, a.calls))
                     for name, call in rollout_rows.items()]
                for name, measure in steps if repeat % 2 == 0 else reversed(steps):
                    samples[name].append(measure())
    finally:
        server.stop()
        shutil.rmtree(data_root, ignore_errors=True)
    m = {name: statistics.median(values) for name, values in samples.items()}
    print(f"talos_reduced floating, {a.knots} knots, nv {model.nv}, nu {nu}, {a.workers} workers "
          f"and threads; request {sent * 8 / 1e6:.2f} MB, answer {answered * 8 / 1e6:.2f} MB; "
          f"medians of {a.repeats} repeats")
    print("| measurement | ms per horizon |")
    print("|---|---|")
    print(f"| Linearize over the wire (Python client) | {m['linearize'] * 1e3:.2f} |")
    print(f"| Echo of the same bytes (Python client) | {m['echo'] * 1e3:.2f} |")
    print(f"| Pinocchio in process, {a.workers} threads | {m['pinocchio'] * 1e3:.2f} |")
    print(f"| torqued's engine in process, {a.workers} threads | {m['engine'] * 1e3:.2f} |")
    print(f"| the client's assembly of Fx and Fu | {m['assemble'] * 1e3:.2f} |")
    print(f"\nLinearize / Pinocchio: {m['linearize'] / m['pinocchio']:.2f} (bar: at most 2)")
    print(f"Linearize / Echo:      {m['linearize'] / m['echo']:.2f} (bar: at most 1.2)")
    rest = m['linearize'] - m['engine'] - m['echo'] - m['assemble']
    print(f"split: engine {m['engine'] * 1e3:.2f} ms, wire (Echo) {m['echo'] * 1e3:.2f} ms, "
          f"assembly {m['assemble'] * 1e3:.2f} ms, rest {rest * 1e3:.2f} ms")
    if a.rollout:
        print(f"\n| call ({a.knots} steps of 1 ms) | ms |")
        print("|---|---|")
        print(f"| Linearize, {a.knots} knots (for comparison) | {m['linearize'] * 1e3:.2f} |")
        for name in rollout_rows:
            print(f"| {name} | {m[name] * 1e3:.2f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "dev"))
    ap.add_argument("--knots", type=int, default=100)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--rollout", action="store_true", help="also time rollout()")
    ap.add_argument("--in-venv", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if not os.path.exists(TALOS):
        sys.exit(f"{TALOS} is not checked out beside the repository")
    if not a.in_venv:
        sys.exit(client_venv.rerun_in_venv(__file__, sys.argv[1:]))
    a.build = os.path.abspath(a.build)
    run(a)


if __name__ == "__main__":
    main()
