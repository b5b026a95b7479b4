"""Fixtures of the hostile-transport suite: the real torqued binary on loopback, and a monitor that
watches it (peak resident memory, health answers) while a test attacks it.

$TORQUED_BINARY is the binary (CTest passes the one it built); $TORQUED_SANITIZED=1 says it runs
under a sanitizer, whose allocator keeps freed memory in quarantine: memory bounds are then not
checked (the calls and the health answers still are).
"""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from raw_http2 import health

REPOSITORY = Path(__file__).resolve().parents[3] / "deploy" / "models"
SANITIZED = os.environ.get("TORQUED_SANITIZED") == "1"
# Every server runs under setpriv (util-linux, essential in Debian), which has the kernel kill it
# when the thread that started it ends (PR_SET_PDEATHSIG): that is the thread that forked it, so
# every server is started on this one thread, which lasts as long as pytest. Not from a
# preexec_fn, which makes Popen call fork() in a process with threads running; without one Popen
# uses vfork() (clients/python/tests/conftest.py says what a fork cost there).
DIE_WITH_PYTEST = ("setpriv", "--pdeathsig", "KILL", "--")
SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="torqued-spawner")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_field(pid, name):
    """A field of /proc/PID/status in bytes (VmRSS, VmHWM), or 0 once the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(name + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


class Torqued:
    """torqued on 127.0.0.1 with its own data directory; `args` are more flags."""

    def __init__(self, args=(), env=None):
        binary = os.environ.get("TORQUED_BINARY")
        if not binary:
            pytest.skip("TORQUED_BINARY is not set: no torqued binary to test")
        self.directory = Path(tempfile.mkdtemp(prefix="torqued-transport-"))
        self.port = free_port()
        self.log_path = self.directory / "torqued.log"
        command = [
            *DIE_WITH_PYTEST,
            binary,
            "--address", "127.0.0.1",
            "--port", str(self.port),
            "--metrics-port", os.environ.get("METRICS_PORT","0"),
            "--data-dir", str(self.directory / "data"),
            "--model-repository", str(REPOSITORY),
            *args,
        ]
        log = open(self.log_path, "wb")
        self.process = SPAWNER.submit(
            subprocess.Popen,
            command,
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(env or {})},
        ).result()
        log.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self._fail("torqued exited at start")
            if health(self.port, timeout=1.0)[1]:
                return
            time.sleep(0.05)
        self._fail("torqued did not become SERVING")

    def _fail(self, what):
        """Raises with the log, after stopping the server and removing its directory: a server
        that failed to start is never handed to a fixture that would stop it."""
        log = self.log()
        self.stop()
        raise RuntimeError(f"{what}:\n{log}")

    @property
    def pid(self):
        return self.process.pid

    def alive(self):
        return self.process.poll() is None

    def rss(self):
        return status_field(self.pid, "VmRSS")

    def peak_rss(self):
        return status_field(self.pid, "VmHWM")

    def log(self):
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self):
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


# Where health is asked from: another address than the attacker's, as a kubelet's probe is, so
# that the per-address connection limit the attacker runs into does not count the probes.
PROBE_ADDRESS = "127.0.0.2"
# Where the other client, whose call must succeed after an attack, connects from: a host of its
# own, not the attacker's, whose address the server may still suspect.
OTHER_CLIENT_ADDRESS = "127.0.0.3"


# The readiness probe's timeout in deploy/k8s (Kubernetes' default), with the attacker on the
# server's CPUs, and two CPU-bound processes too (tests/run.sh must pass beside them). A
# sanitizer's server runs 5-15 times slower: there the bound says that health still answers.
PROBE_TIMEOUT = 10.0 if SANITIZED else 1.0
# The readiness probe's period in deploy/k8s: the deployment takes a pod out of its Service after
# two failed probes in a row (failureThreshold: 2), which needs health failing for at least this
# long.
READINESS_PERIOD = 5.0


class Monitor:
    """Asks the health service on a new connection every `period` seconds, from its own thread,
    and records how long each answer took (a missing answer counts as the wait's timeout). A
    probe fails, as Kubernetes' readiness probe would, when the answer is not SERVING or comes
    later than `probe_timeout`; `longest_outage` is the longest time from a failed probe's asking
    to the next passing probe's (or the end)."""

    def __init__(self, server, period=0.2, timeout=20.0 if SANITIZED else 5.0,
                 probe_timeout=PROBE_TIMEOUT):
        self.server = server
        self.period = period
        self.timeout = timeout
        self.probe_timeout = probe_timeout
        self.latencies = []
        self.failed = []  # (seconds since the start, why) of each failed probe
        self.longest_outage = 0.0  # seconds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        start = time.monotonic()
        outage_from = None  # when the failing probes of the outage under way were asked
        while not self._stop.is_set():
            asked = time.monotonic() - start
            seconds, serving, why = health(self.server.port, timeout=self.timeout,
                                         source=PROBE_ADDRESS)
            self.latencies.append(seconds)
            if serving and seconds > self.probe_timeout:
                serving, why = False, f"answered in {seconds:.2f} s, past the probe's timeout"
            if not serving:
                self.failed.append((asked, why))
                outage_from = asked if outage_from is None else outage_from
            elif outage_from is not None:
                self.longest_outage = max(self.longest_outage, asked - outage_from)
                outage_from = None
            self._stop.wait(self.period)
        if outage_from is not None:
            self.longest_outage = max(self.longest_outage, time.monotonic() - start - outage_from)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    @property
    def worst(self):
        return max(self.latencies, default=0.0)


@pytest.fixture
def start_server():
    servers = []

    def start(*args, env=None):
        server = Torqued(args, env)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()
