"""Command line: one torqued call, JSON in and out.

    python -m torqued [--target HOST:PORT] list-models
    python -m torqued get-model MODEL_ID
    python -m torqued inverse-dynamics MODEL_ID --input states.json [--output result.json]
    python -m torqued --tls-ca ca.pem [--tls-cert c.pem --tls-key c.key] [--token-file T] ...

Every batched method of DynamicsService is a command, its name in kebab case (inverse-dynamics,
contact-dynamics, ...). It reads a JSON object whose keys are the keyword arguments of the Client
method of the same name (q, v, a, tau, algorithm, contacts as proto JSON dicts, ...) and writes an
object of the result's arrays as nested lists (messages as proto JSON). Numbers are
written with Python's repr, which reads back to the same double: results can be compared bit
for bit with another client's. TLS and token options default to the environment variables
torquectl reads (TORQUED_TLS_CA, TORQUED_TLS_CLIENT_CERT, TORQUED_TLS_CLIENT_KEY,
TORQUED_TOKEN_FILE, else the token itself in TORQUED_TOKEN).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
from typing import Any, Optional, Sequence

import numpy as np
from google.protobuf import json_format
from google.protobuf.message import Message

from torqued.client import Client, Error
from torqued.v1 import dynamics_pb2

def _dynamics_commands() -> dict[str, str]:
    """Command -> the name of a bare array result, for every batched method of DynamicsService
    (a request naming a model): the first array of its response. Read from the descriptor, so a
    new RPC is a command once the Client has its method."""
    service = dynamics_pb2.DESCRIPTOR.services_by_name["DynamicsService"]
    commands = {}
    for method in service.methods:
        if method.client_streaming or "model_id" not in method.input_type.fields_by_name:
            continue
        arrays = [
            f.name
            for f in method.output_type.fields
            if f.type == f.TYPE_DOUBLE and f.label == f.LABEL_REPEATED
        ]
        command = re.sub(r"(?<!^)(?=[A-Z])", "-", method.name).lower()
        commands[command] = arrays[0] if arrays else ""
    return commands


DYNAMICS_COMMANDS = _dynamics_commands()


def _jsonable(result: Any, name: str) -> Any:
    if isinstance(result, np.ndarray):
        return {name: result.tolist()}
    if dataclasses.is_dataclass(result):
        fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
    elif hasattr(result, "_asdict"):
        fields = result._asdict()
    else:
        fields = dict(zip(("mass_matrix", "inverse"), result))
    return {k: _value(v) for k, v in fields.items()}


def _value(value: Any) -> Any:
    """An array as nested lists, a message as its proto JSON dict, a list of either as a list."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Message):
        return json_format.MessageToDict(value, preserving_proto_field_name=True)
    if isinstance(value, list):
        return [_value(v) for v in value]
    return value


def _environment(name: str) -> Optional[str]:
    """An environment variable; None when unset or empty."""
    return os.environ.get(name) or None


def _read(path: Optional[str]) -> Optional[bytes]:
    if path is None:
        return None
    with open(path, "rb") as file:
        return file.read()


def _token(path: Optional[str]) -> Optional[str]:
    """The token of a token file (less its trailing line end), else $TORQUED_TOKEN."""
    if path is None:
        return _environment("TORQUED_TOKEN")
    with open(path, "rb") as file:
        token = file.read().decode("ascii").rstrip("\r\n")
    if not token:
        raise ValueError(f"{path}: holds no token")
    return token


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Runs one command; returns the process exit status (0, 1 on a failed call, 2 when a
    certificate, key or token file cannot be used)."""
    parser = argparse.ArgumentParser(prog="python -m torqued", description=__doc__.split("\n")[0])
    parser.add_argument("--target", default="localhost:50051", help="server address")
    parser.add_argument("--timeout", type=float, default=30.0, help="deadline per call, seconds")
    for flag, variable, text in (
        ("--tls-ca", "TORQUED_TLS_CA", "TLS: CA certificates (PEM file)"),
        ("--tls-cert", "TORQUED_TLS_CLIENT_CERT", "mutual TLS: client certificate (PEM file)"),
        ("--tls-key", "TORQUED_TLS_CLIENT_KEY", "its key (PEM file)"),
        ("--token-file", "TORQUED_TOKEN_FILE", "bearer token for every call ($TORQUED_TOKEN)"),
    ):
        parser.add_argument(flag, default=_environment(variable), help=f"{text} [${variable}]")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list-models", help="the models the server holds")
    commands.add_parser("get-model", help="a model's layout").add_argument("model_id")
    for command in DYNAMICS_COMMANDS:
        sub = commands.add_parser(command, help=f"Client.{command.replace('-', '_')}")
        sub.add_argument("model_id")
        sub.add_argument("--input", default="-", help="JSON arguments (default: stdin)")
        sub.add_argument("--output", default="-", help="JSON result (default: stdout)")
    args = parser.parse_args(argv)

    try:
        client = Client(
            args.target,
            timeout=args.timeout,
            root_certificates=_read(args.tls_ca),
            certificate_chain=_read(args.tls_cert),
            private_key=_read(args.tls_key),
            token=_token(args.token_file),
        )
    except (OSError, ValueError) as error:
        print(f"torqued: {error}", file=sys.stderr)
        return 2
    with client:
        try:
            if args.command == "list-models":
                text = json.dumps(
                    [
                        json_format.MessageToDict(m, preserving_proto_field_name=True)
                        for m in client.list_models()
                    ],
                    indent=2,
                )
            elif args.command == "get-model":
                text = json_format.MessageToJson(
                    client.get_model(args.model_id), preserving_proto_field_name=True
                )
            else:
                source = sys.stdin if args.input == "-" else open(args.input, encoding="utf-8")
                with source:
                    kwargs = json.load(source)
                method = getattr(client, args.command.replace("-", "_"))
                result = method(args.model_id, **kwargs)
                text = json.dumps(_jsonable(result, DYNAMICS_COMMANDS[args.command]))
        except Error as error:
            print(f"torqued: {error}", file=sys.stderr)
            return 1
    if getattr(args, "output", "-") == "-":
        print(text)
    else:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(text + "\n")
    return 0


if __name__ == "__main__":
    status = main()
    # A one-shot command ends here without the interpreter's finalization: grpcio's threads
    # (Debian's 1.51) can hang it at exit, as in grpc/grpc#20026 and #40620, and did once in this
    # project's tests after the answer had been printed (the command then never returned).
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)
