"""The servers the tests start die with the pytest process however it ends, starting one forks
nothing, and the scratch directory of a pytest run that died goes with the next run
(conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from conftest import TorquedProcess, remove_dead_runs_scratch

# A pytest process that dies with a server running: starts one, writes its pid and its scratch
# directory, then aborts as a crash would.
ABORTING_RUN = """
import os, sys, tempfile
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from conftest import SCRATCH_PREFIX, TorquedProcess
scratch = Path(tempfile.mkdtemp(prefix=f"{SCRATCH_PREFIX}{os.getpid()}-"))
server = TorquedProcess(scratch / "data")
server.start_serving()
Path(sys.argv[2], "server.pid").write_text(str(server.process.pid))
Path(sys.argv[2], "scratch.path").write_text(str(scratch))
os.abort()
"""


def running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie is not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_an_aborted_run_leaves_no_server_and_no_scratch(server: object, tmp_path: Path) -> None:
    # `server`: skips with the others when there is no torqued binary.
    run = subprocess.run(
        [sys.executable, "-c", ABORTING_RUN, str(Path(__file__).parent), str(tmp_path)],
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        capture_output=True,
        timeout=120,
    )
    assert run.returncode == -6, run.stderr.decode()  # SIGABRT
    pid = int((tmp_path / "server.pid").read_text())
    end = time.monotonic() + 1.0
    while running(pid) and time.monotonic() < end:
        time.sleep(0.01)
    if running(pid):
        os.kill(pid, 9)
        raise AssertionError(f"torqued {pid} outlived the pytest process that started it")

    scratch = Path((tmp_path / "scratch.path").read_text())
    assert scratch.exists(), "nothing to clean up: the test proves nothing"
    remove_dead_runs_scratch()
    assert not scratch.exists()


def test_starting_a_server_runs_no_fork_handlers(launch: type[TorquedProcess]) -> None:
    """A server started with a preexec_fn is forked, and fork() runs grpcio's handler, which waits
    for the channels' threads: with a client retrying on another thread it waited forever, and the
    suite with it (Popen never returned). Without one, Popen uses vfork, which runs no handler;
    Python's own (os.register_at_fork) run exactly when fork() does."""
    forks: list[int] = []
    watching = threading.Event()
    os.register_at_fork(before=lambda: forks.append(1) if watching.is_set() else None)
    server = launch()
    watching.set()
    try:
        server.start()
    finally:
        watching.clear()
        server.stop()
    assert forks == [], "starting a server called fork()"
