"""The examples of clients/python/examples run to their goals against a real torqued on the
repository's own robots (deploy/models), with short horizons. Solved on the server: the reach
ends the Stanford arm's end effector within 1 mm of the target, the base shift moves the
quadruped's base within 1 mm of its target with the feet held in contact (each within 2e-6 m of
where it stood, at every knot), and both plot their cost; the quadruped trots two cycles through
a contact schedule, its base at least 0.2 m forward with every stance foot within 1 mm of its
foothold, and plots its path. The client's own iLQR over Linearize and Rollout (ilqr.py) ends
the same reach within 1 mm too. Over an Mpc stream, the quadruped trots a metre in closed loop
through Simulate with contacts, its base's height within 3 cm of its stance's (mpc_trot.py).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from conftest import TorquedProcess
from support import REPOSITORY

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def example(name: str) -> ModuleType:
    sys.path.insert(0, str(EXAMPLES))  # the modules they share, beside the examples
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_reach_takes_the_end_effector_within_a_millimetre_of_its_target(
    server: TorquedProcess, tmp_path: Path
) -> None:
    plot = tmp_path / "reach.png"
    # Every option spelled out, the target's first coordinate negative (--target=-...).
    exit_code = example("reach").main(
        ["--server", server.address, "--model", str(REPOSITORY / "stanford_arm.dh.txtpb"),
         "--frame", "link6", "--target=-0.1,0.25,0.1", "--q0=0,0,0.2,0,0,0",
         "--knots", "20", "--dt", "0.05", "--plot", str(plot)]
    )
    assert exit_code == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The defaults: the same robot, from the repository beside the example.
    assert example("reach").main(["--server", server.address, "--knots", "20", "--dt", "0.05"]) == 0


def test_the_clients_own_ilqr_takes_the_end_effector_within_a_millimetre_of_its_target(
    server: TorquedProcess, tmp_path: Path
) -> None:
    plot = tmp_path / "ilqr.png"
    exit_code = example("ilqr").main(
        ["--server", server.address, "--knots", "20", "--dt", "0.05", "--plot", str(plot)]
    )
    assert exit_code == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_base_shift_moves_the_quadrupeds_base_within_a_millimetre_with_its_feet_held(
    server: TorquedProcess, tmp_path: Path
) -> None:
    plot = tmp_path / "base_shift.png"
    # The default robot and horizon (1 s in 125 steps, the feet held with deadbeat Baumgarte
    # gains), the shift given with a negative first coordinate.
    exit_code = example("base_shift").main(
        ["--server", server.address, "--shift=-0.03,0.02,-0.02", "--plot", str(plot)]
    )
    assert exit_code == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_trot_moves_the_quadruped_forward_with_its_stance_feet_on_their_footholds(
    server: TorquedProcess, tmp_path: Path
) -> None:
    plot = tmp_path / "trot.png"
    # The default gait: two cycles of 12-knot swings of 0.11 m, the base 0.22 m forward; the
    # example's exit code checks >= 0.2 m and the stance feet within 1 mm of their footholds.
    exit_code = example("trot").main(["--server", server.address, "--plot", str(plot)])
    assert exit_code == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_mpc_trot_goes_a_metre_through_simulate_with_its_base_height_held(
    server: TorquedProcess, tmp_path: Path
) -> None:
    plot = tmp_path / "mpc_trot.png"
    # The default: 12 cycles, 256 ticks of one iteration over a 40-knot window, simulated with
    # contacts; the example's exit code checks >= 1 m forward and the base's height within 3 cm
    # of the stance's (measured: 1.155 m, -9.0 mm to +7.8 mm).
    exit_code = example("mpc_trot").main(["--server", server.address, "--plot", str(plot)])
    assert exit_code == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
