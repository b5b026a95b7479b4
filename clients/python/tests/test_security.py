"""TLS, mutual TLS and bearer tokens: the client (its calls and Session streams) and
`python -m torqued` against a real torqued, with certificates the openssl command makes at run
time (a CA, a server certificate for localhost and 127.0.0.1, a client certificate it signed, and
another CA with a client certificate that the server must refuse)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import grpc
import numpy as np
import pytest

import torqued
from conftest import TorquedProcess
from support import REPOSITORY

ADMIN_TOKEN = "admin-Vx4Lp9Qe2Mn7Rb5T"
CALLER_TOKEN = "caller-Jd8Wk3Hs6Fg1Yc0Z"
NEW_KEY = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")


def _openssl(directory: Path, *args: str) -> None:
    subprocess.run(["openssl", *args], cwd=directory, check=True, capture_output=True)


def _make_ca(directory: Path, name: str) -> None:
    _openssl(
        directory,
        *("req", "-x509", *NEW_KEY, "-days", "2", "-subj", f"/CN=torqued-test-{name}"),
        *("-addext", "basicConstraints=critical,CA:TRUE"),
        *("-addext", "keyUsage=critical,keyCertSign,cRLSign"),
        *("-keyout", f"{name}.key", "-out", f"{name}.pem"),
    )


def _make_certificate(directory: Path, name: str, ca: str, extensions: str, serial: int) -> None:
    (directory / f"{name}.ext").write_text(extensions)
    _openssl(
        directory,
        *("req", "-new", *NEW_KEY, "-subj", f"/CN={name}"),
        *("-keyout", f"{name}.key", "-out", f"{name}.csr"),
    )
    _openssl(
        directory,
        *("x509", "-req", "-days", "2", "-in", f"{name}.csr", "-set_serial", str(serial)),
        *("-CA", f"{ca}.pem", "-CAkey", f"{ca}.key", "-extfile", f"{name}.ext"),
        *("-out", f"{name}.pem"),
    )


@pytest.fixture(scope="module")
def pki(scratch: Path) -> Path:
    """The directory of the certificates and keys (NAME.pem, NAME.key) and token files."""
    if shutil.which("openssl") is None:
        pytest.fail("the openssl command is missing: deploy/install-deps.sh --test installs it")
    directory = scratch / "pki"
    directory.mkdir()
    client = "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n"
    _make_ca(directory, "ca")
    _make_certificate(
        directory,
        "server",
        "ca",
        "basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
        "subjectAltName=DNS:localhost,IP:127.0.0.1\n",
        1,
    )
    _make_certificate(directory, "client", "ca", client, 2)
    _make_ca(directory, "other_ca")
    _make_certificate(directory, "other_client", "other_ca", client, 1)
    (directory / "admin.token").write_text(ADMIN_TOKEN + "\n")
    (directory / "caller.token").write_text(CALLER_TOKEN + "\n")
    return directory


def _tls(pki: Path, client: str = "") -> dict[str, Any]:
    """Client arguments: the CA's certificate as root, and the certificate `client` (if given)."""
    kwargs: dict[str, Any] = {"root_certificates": (pki / "ca.pem").read_bytes()}
    if client:
        kwargs["certificate_chain"] = (pki / f"{client}.pem").read_bytes()
        kwargs["private_key"] = (pki / f"{client}.key").read_bytes()
    return kwargs


@pytest.fixture(scope="module")
def tls_server(launch: type[TorquedProcess], pki: Path) -> TorquedProcess:
    server = launch(
        args=[f"--tls-cert={pki / 'server.pem'}", f"--tls-key={pki / 'server.key'}"],
        client_kwargs=_tls(pki),
    )
    server.start_serving()
    return server


@pytest.fixture(scope="module")
def guarded(launch: type[TorquedProcess], pki: Path) -> TorquedProcess:
    """Mutual TLS (clients need a certificate of the CA), an admin token and a caller token."""
    server = launch(
        args=[
            f"--tls-cert={pki / 'server.pem'}",
            f"--tls-key={pki / 'server.key'}",
            f"--tls-client-ca={pki / 'ca.pem'}",
            f"--admin-token-file={pki / 'admin.token'}",
            f"--token-file={pki / 'caller.token'}",
        ],
        client_kwargs=_tls(pki, "client"),
    )
    server.start_serving()
    return server


def _code(client: torqued.Client, call: str, *args: Any, **kwargs: Any) -> grpc.StatusCode:
    """The status code a call ends with."""
    try:
        getattr(client, call)(*args, **kwargs)
    except torqued.Error as error:
        return error.code
    return grpc.StatusCode.OK


def _refused(address: str, **kwargs: Any) -> grpc.StatusCode:
    with torqued.Client(address, retries=0, timeout=20.0, **kwargs) as client:
        return _code(client, "list_models")


def test_tls_serves_trusting_clients_only(tls_server: TorquedProcess, pki: Path) -> None:
    with torqued.Client(tls_server.address, **_tls(pki)) as client:
        pendulum = next(m for m in client.list_models() if m.name == "double_pendulum")
        tau = client.gravity(pendulum.id, [0.3, -0.2])
    assert tau.shape == (2,) and np.all(np.isfinite(tau)) and np.any(tau != 0)
    assert _refused(tls_server.address) == grpc.StatusCode.UNAVAILABLE
    other_root = (pki / "other_ca.pem").read_bytes()
    assert _refused(tls_server.address, root_certificates=other_root) == grpc.StatusCode.UNAVAILABLE


def test_mutual_tls_accepts_only_certificates_of_the_client_ca(
    guarded: TorquedProcess, pki: Path
) -> None:
    with torqued.Client(guarded.address, token=CALLER_TOKEN, **_tls(pki, "client")) as client:
        assert "stanford_arm" in {m.name for m in client.list_models()}
    for refused in (_tls(pki, "other_client"), _tls(pki)):
        assert _refused(guarded.address, token=CALLER_TOKEN, **refused) == (
            grpc.StatusCode.UNAVAILABLE
        )


def test_tokens_guard_calls_and_health_stays_open(guarded: TorquedProcess, pki: Path) -> None:
    tls = _tls(pki, "client")
    urdf = REPOSITORY / "double_pendulum.urdf"
    with torqued.Client(guarded.address, **tls) as anonymous:
        assert anonymous.health() == "SERVING"
        assert _code(anonymous, "list_models") == grpc.StatusCode.UNAUTHENTICATED
    with torqued.Client(guarded.address, token="not-this-servers", **tls) as stranger:
        assert _code(stranger, "list_models") == grpc.StatusCode.PERMISSION_DENIED
    with torqued.Client(guarded.address, token=CALLER_TOKEN, **tls) as caller:
        assert _code(caller, "register", urdf=urdf, name="guarded") == (
            grpc.StatusCode.PERMISSION_DENIED
        )
        with torqued.Client(guarded.address, token=ADMIN_TOKEN, **tls) as admin:
            model = admin.register(urdf=urdf, name="guarded")
            assert caller.gravity(model.id, [0.1, 0.2]).shape == (2,)
            admin.delete_model(model.id)


def test_sessions_carry_tls_and_the_token(guarded: TorquedProcess, pki: Path) -> None:
    tls = _tls(pki, "client")
    with torqued.Client(guarded.address, token=CALLER_TOKEN, **tls) as caller:
        with caller.session() as session:
            session.send("Echo", values=[4.0])
            assert next(session).response.values.tolist() == [4.0]
    with torqued.Client(guarded.address, **tls) as anonymous:
        session = anonymous.session()
        session.send("Echo", values=[4.0])
        with pytest.raises(torqued.Error) as refused:
            next(session)
        assert refused.value.code == grpc.StatusCode.UNAUTHENTICATED


def test_cli_takes_tls_and_token_from_flags_and_environment(
    guarded: TorquedProcess, pki: Path
) -> None:
    command = [sys.executable, "-m", "torqued", "--target", guarded.address, "list-models"]
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("TORQUED_TLS_", "TORQUED_TOKEN"))
    }

    def run(*flags: str, **variables: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*command[:5], *flags, *command[5:]],
            env={**environment, **variables},
            capture_output=True,
            text=True,
            timeout=120,
        )

    certificate = ["--tls-cert", str(pki / "client.pem"), "--tls-key", str(pki / "client.key")]
    flags = run(
        "--tls-ca", str(pki / "ca.pem"), *certificate, "--token-file", str(pki / "caller.token")
    )
    assert flags.returncode == 0, flags.stderr
    assert "stanford_arm" in flags.stdout
    variables = run(
        TORQUED_TLS_CA=str(pki / "ca.pem"),
        TORQUED_TLS_CLIENT_CERT=str(pki / "client.pem"),
        TORQUED_TLS_CLIENT_KEY=str(pki / "client.key"),
        TORQUED_TOKEN=CALLER_TOKEN,
    )
    assert variables.returncode == 0, variables.stderr
    assert variables.stdout == flags.stdout
    anonymous = run("--tls-ca", str(pki / "ca.pem"), *certificate)
    assert anonymous.returncode == 1
    assert "UNAUTHENTICATED" in anonymous.stderr
    unpaired = run("--tls-ca", str(pki / "ca.pem"), "--tls-cert", str(pki / "client.pem"))
    assert unpaired.returncode == 2
    assert "certificate_chain and private_key go together" in unpaired.stderr


def test_credentials_are_checked_before_connecting(pki: Path) -> None:
    chain = (pki / "client.pem").read_bytes()
    with pytest.raises(ValueError, match="go together"):
        torqued.Client("localhost:1", certificate_chain=chain)
    with pytest.raises(ValueError, match="not both"):
        torqued.Client(
            "localhost:1",
            credentials=grpc.ssl_channel_credentials(),
            root_certificates=(pki / "ca.pem").read_bytes(),
        )
