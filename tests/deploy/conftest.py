"""Helpers of the container tests (tests/deploy/run.sh sets the environment they read).

The tests drive real containers through the podman command line, and torqued in them through
the host build's torquectl over ports published on loopback only. Every container, pod, volume
and network a test makes is named after this run (`torqued-test-PID-...`) and removed at the end,
whatever the outcome.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Iterator, Optional

import pytest

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "torqued:latest"
PROMETHEUS_IMAGE = "torqued-prometheus:latest"
PREFIX = f"torqued-test-{os.getpid()}"


def binary(variable: str) -> str:
    path = os.environ.get(variable)
    if not path or not Path(path).exists():
        pytest.fail(
            f"{variable} must name a binary of the host build (tests/deploy/run.sh sets it)"
        )
    return path


def run(
    *command: str, check: bool = True, timeout: float = 600, **kwargs
) -> subprocess.CompletedProcess:
    """Runs a command, capturing its output as text; fails the test with its output."""
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout, **kwargs)
    if check and result.returncode != 0:
        pytest.fail(
            f"{' '.join(command)} exited {result.returncode}\n"
            f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
        )
    return result


def podman(*args: str, check: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
    return run("podman", *args, check=check, timeout=timeout)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torquectl(
    server: str, *args: str, check: bool = True, stdin: Optional[str] = None, deadline: float = 30
) -> subprocess.CompletedProcess:
    return run(
        binary("TORQUECTL_BINARY"),
        *args,
        "--server",
        server,
        "--deadline",
        str(deadline),
        check=check,
        input=stdin,
    )


def wait_serving(server: str, timeout: float) -> Optional[float]:
    """Seconds until grpc.health.v1 says SERVING at `server`, or None after `timeout`."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if torquectl(server, "health", check=False, deadline=1).stdout.strip() == "SERVING":
            return time.monotonic() - start
        time.sleep(0.1)
    return None


def http_get(url: str, timeout: float = 10) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read().decode()


def prometheus_query(port: int, expr: str) -> list[dict]:
    """The result vector of an instant query to the Prometheus on `port`."""
    query = urllib.parse.urlencode({"query": expr})
    answer = json.loads(http_get(f"http://127.0.0.1:{port}/api/v1/query?{query}"))
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


class Made:
    """What a test made: containers, pods, volumes, networks, removed at the end."""

    def __init__(self) -> None:
        self.containers: list[str] = []
        self.volumes: list[str] = []
        self.cleanups: list[list[str]] = []

    def name(self, what: str) -> str:
        return f"{PREFIX}-{what}"

    def container(self, what: str) -> str:
        name = self.name(what)
        self.containers.append(name)
        return name

    def volume(self, what: str) -> str:
        name = self.name(what)
        self.volumes.append(name)
        return name

    def remove(self) -> None:
        for command in reversed(self.cleanups):
            run(*command, check=False)
        for container in reversed(self.containers):
            podman("rm", "--force", "--time", "0", container, check=False)
        for volume in self.volumes:
            podman("volume", "rm", "--force", volume, check=False)


@pytest.fixture
def made() -> Iterator[Made]:
    things = Made()
    yield things
    things.remove()


def leftovers() -> list[str]:
    """Containers, pods, volumes and networks of this run still there."""
    listings = {
        "container": ("ps", "--all", "--format", "{{.Names}}"),
        "pod": ("pod", "ps", "--format", "{{.Name}}"),
        "volume": ("volume", "ls", "--format", "{{.Name}}"),
        "network": ("network", "ls", "--format", "{{.Name}}"),
    }
    return [
        f"{kind} {name}"
        for kind, listing in listings.items()
        for name in podman(*listing, check=False).stdout.split()
        if name.startswith(PREFIX)
    ]


@pytest.fixture(scope="session", autouse=True)
def nothing_left_behind() -> Iterator[None]:
    yield
    left = leftovers()
    assert not left, f"left behind: {left}"
