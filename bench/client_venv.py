"""The benchmarks that go through the Python client run in a venv of their own holding it, built
as tests/clients/python/run_pytest.sh builds its own: the package copied out of clients/python,
installed offline on the system's site packages (grpcio, numpy) with its stubs generated from
proto/."""
import os
import shutil
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rerun_in_venv(script, argv):
    """Runs `script` again with `argv` and --in-venv in a new venv holding the client; returns
    its exit code. The venv is removed afterwards."""
    work = tempfile.mkdtemp(prefix="torqued-bench-")
    try:
        return _run_in_venv(work, script, argv)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _run_in_venv(work, script, argv):
    package = os.path.join(work, "package")
    os.makedirs(package)
    for name in ("pyproject.toml", "setup.py", "torqued"):
        source = os.path.join(ROOT, "clients", "python", name)
        subprocess.run(["cp", "-r", source, package], check=True)
    subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", "--without-pip",
                    os.path.join(work, "venv")], check=True)
    python = os.path.join(work, "venv", "bin", "python")
    subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-build-isolation",
                    "--no-index", package], check=True,
                   env={**os.environ, "TORQUED_PROTO_DIR": os.path.join(ROOT, "proto")})
    return subprocess.run([python, "-P", os.path.abspath(script), "--in-venv", *argv]).returncode
