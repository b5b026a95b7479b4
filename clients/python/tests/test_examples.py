"""The examples of clients/python/examples run to their goals against a real torqued, with short
horizons: the trajectory optimizer's reach ends its end effector within 1 mm of the target, its
base shift moves solo12's base within 1 mm of its target with the feet held in contact (each
within 1e-6 m of where it stood, at every knot), and both plot their cost.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from conftest import TorquedProcess

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SHARED_MODELS = Path(__file__).resolve().parents[4] / "shared" / "models"


def example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_reach_takes_the_end_effector_within_a_millimetre_of_its_target(
    server: TorquedProcess, tmp_path: Path
) -> None:
    ur5 = SHARED_MODELS / "ur5.urdf"
    if not ur5.exists():
        pytest.skip(f"{ur5} is not checked out beside the repository")
    plot = tmp_path / "reach.png"
    exit_code = example("reach").main(
        ["--server", server.address, "--urdf", str(ur5), "--knots", "20", "--dt", "0.05",
         "--plot", str(plot)]
    )
    assert exit_code == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_base_shift_moves_solo12s_base_within_a_millimetre_with_its_feet_held(
    server: TorquedProcess, tmp_path: Path
) -> None:
    solo12 = SHARED_MODELS / "solo12.urdf"
    if not solo12.exists():
        pytest.skip(f"{solo12} is not checked out beside the repository")
    plot = tmp_path / "base_shift.png"
    # The default horizon: 1 s in 125 steps, the feet held with deadbeat Baumgarte gains.
    exit_code = example("base_shift").main(
        ["--server", server.address, "--urdf", str(solo12), "--plot", str(plot)]
    )
    assert exit_code == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
