#!/usr/bin/env python3
"""Model predictive control on torqued: a quadruped trots forward in closed loop, re-planned at
every knot over a ControlService.Mpc stream and simulated by the server's Simulate with contacts.

    python3 mpc_trot.py [--server localhost:50051] [trot.py's robot and gait options]
                        [--cycles 12] [--window 40] [--iterations 1] [--friction 0.7]
                        [--substeps 10] [--advance 1.0] [--height-band 0.03] [--timeout 600]
                        [--plot mpc.png]

The gait is trot.py's: four feet for --stand-knots knots, then --cycles cycles of the diagonal
pairs swapping every --step-knots knots, each swing --stride metres forward. The controller
plans --window knots ahead. At knot k it sends the measured state with trot.py's problem for
knots k to k + window (the schedule moved on, the footholds where the gait puts them, each stance
foot's force in its --friction cone) and the server re-solves it, warm-started from its last plan
shifted by one knot, in --iterations FDDP iterations (one: a real-time iteration), and answers
the first control. The plant is the server's Simulate: the free-flying robot on a ground plane
that only pushes, its feet contact candidates (friction 1), --substeps steps per knot with the
control held. The first plan is solved to convergence (at most 50 iterations) before the loop.
The stream's deadline, --timeout seconds, bounds the whole loop, as a control loop's stream needs
a deadline of its own rather than a call's.

The script prints the base's progress, its height about the stance's and the ticks' latency (the
Mpc call as the client sees it); --plot draws the base's path and height (PNG). It exits 0 when
the base went at least --advance metres forward with its height within --height-band metres of
the stance's throughout.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import torqued

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trot import add_trot_options, trot_of  # noqa: E402 (beside this script)


def plot(dt: float, base: np.ndarray, reference: np.ndarray, path: str) -> None:
    """The base's forward position and height over time against the stance's, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    time_axis = dt * np.arange(base.shape[0])
    figure, (path_axes, height_axes) = pyplot.subplots(2, 1, figsize=(7, 6), sharex=True)
    path_axes.plot(time_axis, base[:, 0], label="base")
    path_axes.plot(time_axis, reference[:, 0], "--", label="reference")
    path_axes.set_ylabel("forward, m")
    path_axes.set_title("MPC on torqued: trot through Simulate")
    path_axes.legend()
    height_axes.plot(time_axis, base[:, 2] - reference[:, 2])
    height_axes.set_xlabel("time, s")
    height_axes.set_ylabel("height about the stance's, m")
    for axes in (path_axes, height_axes):
        axes.grid(True, alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_trot_options(ap, cycles=12)
    ap.add_argument("--window", type=int, default=40, help="knots planned ahead")
    ap.add_argument("--iterations", type=int, default=1, help="FDDP iterations per tick")
    ap.add_argument("--friction", type=float, default=0.7, help="the plan's friction cones' mu")
    ap.add_argument("--substeps", type=int, default=10, help="Simulate's steps per knot")
    ap.add_argument("--advance", type=float, default=1.0, help="metres the base must go")
    ap.add_argument("--height-band", type=float, default=0.03, help="metres about the stance's")
    ap.add_argument("--timeout", type=float, default=600.0, help="the stream's deadline, seconds")
    ap.add_argument("--plot", default="", help="PNG of the base's path and height")
    a = ap.parse_args(argv)
    with torqued.Client(a.server) as client:
        trot = trot_of(client, ap, a)
        model = trot.model
        ticks = trot.gait.knots - a.window
        if ticks < 1:
            ap.error(f"--window: {a.window} knots leave no tick in the gait's {trot.gait.knots}")
        candidates = [{"frame": foot} for foot in a.feet]
        q, v = trot.q0.copy(), np.zeros(model.nv)
        base = [client.kinematics(model.id, q, frames=[a.base]).positions[0]]
        latencies = []
        first = trot.problem(0, a.window, friction=a.friction)
        with client.mpc(first, iterations=50, timeout=a.timeout) as mpc:
            step = mpc.first
            for k in range(1, ticks + 1):
                run = client.simulate(
                    model.id, q, v, a.substeps, time_step=a.dt / a.substeps,
                    tau=np.concatenate([np.zeros(6), step.u0]), candidates=candidates,
                    friction=1.0,
                )
                q, v = run.q[-1], run.v[-1]
                window = trot.problem(k, a.window, (q, v), friction=a.friction)
                start = time.monotonic()
                step = mpc.tick(q, v, k * a.dt, problem=window, iterations=a.iterations)
                latencies.append(time.monotonic() - start)
                base.append(client.kinematics(model.id, q, frames=[a.base]).positions[0])
    base_path = np.array(base)
    reference = np.array([trot.base_reference(k) for k in range(ticks + 1)])
    advance = float(base_path[-1, 0] - base_path[0, 0])
    height = base_path[:, 2] - trot.base_position[2]
    print(
        f"{ticks} ticks of {a.iterations} iteration(s) over a {a.window}-knot window: the base "
        f"went {advance:.3f} m forward (the gait's reference {reference[-1, 0] - reference[0, 0]:.3f}"
        f" m), its height within [{height.min():+.4f}, {height.max():+.4f}] m of the stance's; "
        f"a tick took {1e3 * np.median(latencies):.1f} ms (median), "
        f"{1e3 * np.percentile(latencies, 99):.1f} ms (p99) for the client"
    )
    if a.plot:
        plot(a.dt, base_path, reference, a.plot)
    return 0 if advance >= a.advance and np.abs(height).max() <= a.height_band else 1


if __name__ == "__main__":
    sys.exit(main())
