"""Fixtures: the real torqued binary on loopback, and clients of it.

The binary is $TORQUED_BINARY (CTest passes the one it built; tests/clients/python/run_pytest.sh
too); the bundled models are $TORQUED_MODEL_REPOSITORY, else the repository's deploy/models.
Without a binary every test that needs a server is skipped with that message.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

import pytest

import torqued
from support import REPOSITORY


# Scratch directories are named torqued-pytest-PID-..., PID the pytest process that made them.
SCRATCH_PREFIX = "torqued-pytest-"


# Every server runs under setpriv (util-linux, essential in Debian), which has the kernel kill it
# when the thread that started it ends (PR_SET_PDEATHSIG), however pytest ends: a crash, a kill,
# CTest's timeout. That is the thread that forked it, not its process, and a test may start a
# server from a short-lived thread (threading.Timer): every server is started on this one thread
# instead, which lasts as long as pytest. Not from a preexec_fn: Popen then calls fork(), whose
# grpcio handler waited forever while a client retried on another thread (test_lifetime.py);
# without one Popen uses vfork(), which runs no fork handler.
DIE_WITH_PYTEST = ("setpriv", "--pdeathsig", "KILL", "--")
SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="torqued-spawner")


def remove_dead_runs_scratch() -> None:
    """Removes the scratch directories of pytest runs that died before they could."""
    for path in Path(tempfile.gettempdir()).glob(f"{SCRATCH_PREFIX}*-*"):
        owner = path.name[len(SCRATCH_PREFIX) :].split("-")[0]
        if not owner.isdigit():
            continue
        try:
            os.kill(int(owner), 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except PermissionError:
            pass


def free_port() -> int:
    """A loopback TCP port that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TorquedProcess:
    """torqued as a child process with its own data directory and port.

    `args` are more torqued flags; `client_kwargs` are the torqued.Client arguments its health
    probes need (the TLS material of a server started with --tls-cert).
    """

    def __init__(
        self,
        data_dir: Path,
        port: Optional[int] = None,
        args: Sequence[str] = (),
        client_kwargs: Optional[dict[str, Any]] = None,
    ) -> None:
        binary = os.environ.get("TORQUED_BINARY")
        if not binary:
            pytest.skip("TORQUED_BINARY is not set: no torqued binary to test against")
        self.binary = binary
        self.data_dir = data_dir
        self.port = port or free_port()
        self.log_path = data_dir.parent / f"{data_dir.name}-torqued.log"
        self.args = list(args)
        self.client_kwargs = client_kwargs or {}
        self.process: Optional[subprocess.Popen[bytes]] = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        """Launches the process without waiting for it."""
        with open(self.log_path, "ab") as log:
            self.process = SPAWNER.submit(
                subprocess.Popen,
                [
                    *DIE_WITH_PYTEST,
                    self.binary,
                    "--address=127.0.0.1",
                    f"--port={self.port}",
                    "--metrics-port=0",
                    f"--data-dir={self.data_dir}",
                    f"--model-repository={REPOSITORY}",
                    *self.args,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
            ).result()

    def wait_serving(self, timeout: float = 60.0) -> bool:
        """Polls health until SERVING; False if the process exited or the time ran out. The probe's
        channel is opened once the port accepts connections: a gRPC channel whose first attempts
        were refused backs off between attempts, whatever its initial backoff, and took 5 s (15 s
        with TLS) to try again after the server had started."""
        end = time.monotonic() + timeout
        while not self._accepts_connections():
            if self.process is None or self.process.poll() is not None:
                return False
            if time.monotonic() >= end:
                return False
            time.sleep(0.01)
        with torqued.Client(
            self.address, retries=0, initial_backoff=0.02, **self.client_kwargs
        ) as probe:
            while time.monotonic() < end:
                if self.process is None or self.process.poll() is not None:
                    return False
                try:
                    if probe.health(timeout=1.0) == "SERVING":
                        return True
                except torqued.Error:
                    pass
                time.sleep(0.02)
        return False

    def _accepts_connections(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1.0):
                return True
        except OSError:
            return False

    def start_serving(self) -> None:
        """Starts and waits for SERVING, on a new port if the chosen one was taken meanwhile."""
        for _ in range(3):
            self.start()
            if self.wait_serving():
                return
            self.stop()
            self.port = free_port()
        pytest.fail(f"torqued did not become SERVING; its log:\n{self.log_path.read_text()}")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        self.process = None


@pytest.fixture(scope="session")
def scratch() -> Iterator[Path]:
    """A temporary directory for data directories and logs."""
    remove_dead_runs_scratch()
    with tempfile.TemporaryDirectory(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-") as path:
        yield Path(path)


@pytest.fixture(scope="session")
def launch(scratch: Path) -> Iterator[type[TorquedProcess]]:
    """Makes servers (each with a fresh data directory) that are killed at the end."""
    started: list[TorquedProcess] = []

    class Launched(TorquedProcess):
        def __init__(
            self,
            port: Optional[int] = None,
            args: Sequence[str] = (),
            client_kwargs: Optional[dict[str, Any]] = None,
        ) -> None:
            super().__init__(Path(tempfile.mkdtemp(dir=scratch)), port, args, client_kwargs)
            started.append(self)

    yield Launched
    for server in started:
        server.stop()


@pytest.fixture(scope="session")
def server(launch: type[TorquedProcess]) -> TorquedProcess:
    """The session's server, SERVING the bundled models."""
    process = launch()
    process.start_serving()
    return process


@pytest.fixture(scope="session")
def client(server: TorquedProcess) -> Iterator[torqued.Client]:
    with torqued.Client(server.address, timeout=60.0) as c:
        yield c


@pytest.fixture(scope="session")
def bundled(client: torqued.Client) -> dict[str, str]:
    """Model name -> id for the repository models."""
    return {m.name: m.id for m in client.list_models()}
