"""torqued's container image (deploy/Dockerfile), built by tests/deploy/run.sh and run for real:
small and free of build tools, non-root, up and SERVING within seconds with the bundled models,
computing bitwise what the host build computes, exporting metrics, healthy by its HEALTHCHECK,
keeping a registered model on its volume across containers, and draining on `podman stop` with
exit status 0."""

from __future__ import annotations

import json
import math
import subprocess
import time
from pathlib import Path

import pytest

from conftest import (
    IMAGE,
    ROOT,
    Made,
    binary,
    free_port,
    http_get,
    podman,
    run,
    torquectl,
    wait_serving,
)

BUNDLED = {"double_pendulum", "four_bar", "puma560", "quadruped", "slider_crank", "stanford_arm"}


def inspect_image(template: str) -> str:
    return podman("image", "inspect", "--format", template, IMAGE).stdout.strip()


def test_image_holds_no_compiler_no_dev_package_no_apt_lists() -> None:
    listing = podman(
        "run",
        "--rm",
        "--entrypoint",
        "sh",
        IMAGE,
        "-c",
        "dpkg-query -W -f '${Package}\\n'; echo ---; ls -A /var/lib/apt/lists; echo ---; "
        "for tool in cc c++ gcc g++ cpp clang ld as make cmake ninja; do "
        "command -v $tool || true; done",
    ).stdout
    packages, lists, tools = (part.split() for part in listing.split("---"))
    assert [p for p in packages if p.endswith("-dev")] == []
    assert {"gcc", "g++", "cpp", "binutils", "build-essential", "cmake"} & set(packages) == set()
    assert lists == [] and tools == []
    size_mb = int(inspect_image("{{.Size}}")) / 1e6
    print(f"runtime image: {size_mb:.0f} MB, {len(packages)} packages")
    assert size_mb < 300


def test_build_context_holds_sources_only(made: Made, tmp_path: Path) -> None:
    """What .dockerignore lets into the build context of the repository root, as a build sees
    it: the sources the Dockerfile copies, no build tree, no .git."""
    probe = tmp_path / "Dockerfile"
    probe.write_text("FROM localbase:bookworm\nCOPY . /context\n")
    tag = made.name("context")
    made.cleanups.append(["podman", "rmi", "--force", tag])
    podman("build", "--quiet", "--tag", tag, "--file", str(probe), str(ROOT))
    listing = podman("run", "--rm", tag, "ls", "-A", "/context", "/context/deploy").stdout
    top, deploy = (part.split()[1:] for part in listing.split("\n\n"))
    assert sorted(top) == ["CMakeLists.txt", "clients", "deploy", "engine", "proto", "server"]
    assert sorted(deploy) == ["install-deps.sh", "models", "runtime-packages.sh"]


def test_image_declares_user_volume_ports_and_healthcheck() -> None:
    config = json.loads(inspect_image("{{json .Config}}"))
    assert config["User"] == "10001:10001"
    assert set(config["Volumes"]) == {"/var/lib/torqued"}
    assert set(config["ExposedPorts"]) == {"50051/tcp", "9464/tcp"}
    assert "TORQUED_DATA_DIR=/var/lib/torqued" in config["Env"]
    [image] = json.loads(podman("image", "inspect", IMAGE).stdout)
    assert "torquectl health" in " ".join(image["Healthcheck"]["Test"])


def run_container(made: Made, name: str, volume: str, grpc_port: int, metrics_port: int) -> str:
    podman(
        "run",
        "--detach",
        "--name",
        name,
        "--publish",
        f"127.0.0.1:{grpc_port}:50051",
        "--publish",
        f"127.0.0.1:{metrics_port}:9464",
        "--volume",
        f"{volume}:/var/lib/torqued",
        IMAGE,
    )
    return f"127.0.0.1:{grpc_port}"


def host_server(tmp_path: Path, port: int) -> subprocess.Popen:
    """The host build's torqued over the same bundled models."""
    return subprocess.Popen(
        [
            binary("TORQUED_BINARY"),
            "--address=127.0.0.1",
            f"--port={port}",
            "--metrics-port=0",
            f"--data-dir={tmp_path / 'host-data'}",
            f"--model-repository={ROOT / 'deploy/models'}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def states_json(layout: dict, count: int) -> str:
    """Deterministic states whose digits exercise every bit of the doubles, with unit
    quaternions where the layout (`torquectl get`) has free-flyer or spherical joints."""
    nq, nv = int(layout["nq"]), int(layout["nv"])
    q = [[((7 * s + 3 * j) % 23) / 7.3 - 1.4 for j in range(nq)] for s in range(count)]
    v = [[((5 * s + 11 * j) % 19) / 3.1 - 2.9 for j in range(nv)] for s in range(count)]
    quaternions = {"JOINT_TYPE_FREE_FLYER": 3, "JOINT_TYPE_SPHERICAL": 0}
    for joint in layout["joints"]:
        if joint["type"] in quaternions:
            start = int(joint.get("idx_q", 0)) + quaternions[joint["type"]]
            for state in q:
                norm = math.sqrt(sum(x * x for x in state[start : start + 4]))
                state[start : start + 4] = [x / norm for x in state[start : start + 4]]
    return json.dumps({"q": q, "v": v, "a": v, "tau": v})


def test_container_serves_computes_exports_and_drains(made: Made, tmp_path: Path) -> None:
    volume = made.volume("data")
    name = made.container("torqued")
    grpc_port, metrics_port = free_port(), free_port()
    start = time.monotonic()
    server = run_container(made, name, volume, grpc_port, metrics_port)
    serving = wait_serving(server, timeout=60)
    assert serving is not None, podman("logs", name, check=False).stdout
    print(f"container SERVING {time.monotonic() - start:.1f} s after podman run")

    assert podman("exec", name, "id", "-u").stdout.strip() == "10001"
    models = {m["name"]: m for m in json.loads(torquectl(server, "models").stdout)["models"]}
    assert BUNDLED <= set(models)

    # The same request to the host build's server and to the container's: the same bytes back.
    host_port = free_port()
    host = host_server(tmp_path, host_port)
    try:
        assert wait_serving(f"127.0.0.1:{host_port}", timeout=60) is not None
        for model_name in ("quadruped", "puma560", "four_bar"):
            model = models[model_name]
            states = states_json(json.loads(torquectl(server, "get", model["id"]).stdout), 16)
            for command in ("inverse-dynamics", "forward-dynamics", "mass-matrix"):
                answers = [
                    torquectl(address, command, model["id"], stdin=states).stdout
                    for address in (server, f"127.0.0.1:{host_port}")
                ]
                assert answers[0] == answers[1], (model_name, command)
    finally:
        host.terminate()
        host.wait(timeout=60)

    metrics = http_get(f"http://127.0.0.1:{metrics_port}/metrics")
    assert 'grpc_method="InverseDynamics"' in metrics
    assert "torqued_models_registered" in metrics

    assert podman("healthcheck", "run", name, check=False).returncode == 0

    # Stop: SIGTERM to torqued (PID 1), which drains and exits 0.
    podman("stop", "--time", "60", name)
    assert podman("inspect", "--format", "{{.State.ExitCode}}", name).stdout.strip() == "0"
    logs = podman("logs", name).stderr + podman("logs", name).stdout
    assert "received SIGTERM" in logs and "stopped" in logs


def test_registered_model_survives_a_new_container_on_the_same_volume(made: Made) -> None:
    volume = made.volume("store")
    first = made.container("first")
    server = run_container(made, first, volume, free_port(), free_port())
    assert wait_serving(server, timeout=60) is not None
    urdf = str(ROOT / "deploy/models/quadruped.urdf")
    model_id = torquectl(server, "register", urdf, "--name", "walker").stdout.strip()
    podman("stop", "--time", "60", first)
    podman("rm", first)

    second = made.container("second")
    server = run_container(made, second, volume, free_port(), free_port())
    assert wait_serving(server, timeout=60) is not None
    model = json.loads(torquectl(server, "get", model_id).stdout)
    assert model["name"] == "walker"
    podman("stop", "--time", "60", second)
