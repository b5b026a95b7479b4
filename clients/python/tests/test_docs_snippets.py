"""The snippets of the docs run as written: docs/operating.md's contact snippets hold the feet
where they stand, and docs/optimal-control.md's reach converges to its target.

The Python blocks after a `<!-- snippet: contacts -->` marker (Linearize's, then Rollout's and
the contact schedule's, which go on inside the first one's `with`) run in one namespace against a
real torqued, its address put for localhost:50051. Their contacts give no anchor, so the
quadruped's feet are held where they stand at the first knot: every rollout takes its K steps,
and every foot of every state of the rollouts and of Linearize's steps stays within
FOOT_TOLERANCE of where it stood. The schedule's trot answers per knot as its comments say.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

import torqued
from conftest import TorquedProcess

OPERATING = Path(__file__).resolve().parents[3] / "docs" / "operating.md"
OPTIMAL_CONTROL = OPERATING.with_name("optimal-control.md")
SNIPPET = re.compile(r"<!-- snippet: contacts -->\n```python\n(.*?)```", re.DOTALL)
FEET = ["FL_foot", "FR_foot", "HL_foot", "HR_foot"]
# Held with the deadbeat gains, a foot moves by one step's residual, O(dt²) of the curvature terms
# (measured: 2.3 µm at most over the 50 steps of 10 ms). Pulled to the world origin as they were
# before, Linearize's first step moved them by 0.24 m and the rollouts diverged at step 7.
FOOT_TOLERANCE = 1e-5  # m


def foot_positions(client: torqued.Client, model_id: str, q: np.ndarray) -> np.ndarray:
    """The feet's world positions at each configuration of q (..., nq): (..., 4, 3)."""
    flat = q.reshape(-1, q.shape[-1])
    positions = client.kinematics(model_id, flat, frames=FEET).positions
    return positions.reshape(*q.shape[:-1], len(FEET), 3)


def test_contact_snippets_run_as_written_and_hold_the_feet_where_they_stand(
    server: TorquedProcess, client: torqued.Client
) -> None:
    snippets = SNIPPET.findall(OPERATING.read_text())
    assert len(snippets) == 3, "docs/operating.md: Linearize's, Rollout's and the schedule's"
    code = "".join(snippets).replace('"localhost:50051"', repr(server.address))
    scope: dict = {}
    exec(compile(code, str(OPERATING), "exec"), scope)

    dog, q0, K = scope["dog"], scope["q0"], scope["K"]
    out, lin = scope["out"], scope["lin"]
    assert list(out.steps) == [K] * 3, out.errors
    stood = foot_positions(client, dog.id, q0)
    # Standing on its feet, not at the world origin: the snippet's stance puts them below the hips.
    assert np.all(np.abs(stood[:, :2]) > 0.05)
    rollout_drift = np.abs(foot_positions(client, dog.id, out.q) - stood).max()
    linearize_drift = np.abs(foot_positions(client, dog.id, lin.q_next) - stood).max()
    assert rollout_drift < FOOT_TOLERANCE
    assert linearize_drift < FOOT_TOLERANCE
    # The snippet's own frames say the same of the front left foot, while the base rises.
    assert np.abs(out.frame_positions[:, :, 1] - stood[0]).max() < FOOT_TOLERANCE
    assert np.all(out.frame_positions[:, -1, 0, 2] > q0[2])

    trot = scope["trot"]
    assert trot.steps == K, trot.errors
    rows = [m.size for m in trot.knots.multipliers]
    assert rows == [12] * 10 + [6] * 24 + [12] * 16
    assert {k: v.size for k, v in trot.knots.impulses.items()} == {22: 6, 34: 12}
    assert trot.knots.friction_cones[10].shape == (2, 5)
    assert trot.knots.dfriction_cones_dx[40].shape == (4, 5, 2 * dog.nv)


def test_the_solve_snippet_runs_as_written_and_reaches_its_target(
    server: TorquedProcess, client: torqued.Client
) -> None:
    snippet = re.compile(r"<!-- snippet: solve -->\n```python\n(.*?)```", re.DOTALL)
    (code,) = snippet.findall(OPTIMAL_CONTROL.read_text())
    scope: dict = {}
    exec(compile(code.replace('"localhost:50051"', repr(server.address)),
                 str(OPTIMAL_CONTROL), "exec"), scope)
    solution, arm = scope["solution"], scope["arm"]
    assert solution.stop_reason == "converged"
    assert solution.feedback.shape == (40, 6, 12)
    reached = client.kinematics(arm.id, solution.q[-1], frames=["link6"]).positions
    assert np.linalg.norm(reached.reshape(3) - np.array([0.4, 0.2, 0.3])) < 1e-2
