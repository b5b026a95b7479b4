"""Build hook: generates the torqued.v1 messages and gRPC stubs into the build tree.

The .proto files are found in $TORQUED_PROTO_DIR, else ./proto beside this file, else the
repository's ../../proto. They are compiled with Debian's protoc (protobuf-compiler) and
grpc_python_plugin (protobuf-compiler-grpc), or $TORQUED_PROTOC / $TORQUED_GRPC_PYTHON_PLUGIN:
grpc_tools.protoc from python3-grpc-tools 1.14 bundles protoc 3.5, which rejects the proto3
`optional` fields of model.proto. protoc 3.21 matches Debian's protobuf runtime (4.21).
With --proto_path at the directory holding torqued/v1/, the modules land in torqued/v1/ inside
the package and import each other as torqued.v1.*_pb2.
"""

import os
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
PACKAGE_PROTOS = Path("torqued") / "v1"


def proto_dir() -> Path:
    candidates = [HERE / "proto", HERE.parent.parent / "proto"]
    if "TORQUED_PROTO_DIR" in os.environ:
        candidates = [Path(os.environ["TORQUED_PROTO_DIR"])]
    for candidate in candidates:
        if (candidate / PACKAGE_PROTOS).is_dir():
            return candidate
    raise SystemExit(
        "torqued: no torqued/v1/*.proto under "
        + ", ".join(str(c) for c in candidates)
        + "; set TORQUED_PROTO_DIR to the repository's proto/ directory"
    )


def tool(variable: str, name: str, package: str) -> str:
    path = os.environ.get(variable) or shutil.which(name)
    if not path:
        raise SystemExit(f"torqued: {name} not found (Debian package {package}, or set {variable})")
    return path


class BuildPyWithStubs(build_py):
    """build_py, then protoc into the build tree's torqued/v1/."""

    def run(self) -> None:
        super().run()
        root = proto_dir()
        protos = sorted(str(p) for p in (root / PACKAGE_PROTOS).glob("*.proto"))
        out = Path(self.build_lib)
        (out / PACKAGE_PROTOS).mkdir(parents=True, exist_ok=True)
        plugin = tool("TORQUED_GRPC_PYTHON_PLUGIN", "grpc_python_plugin", "protobuf-compiler-grpc")
        command = [
            tool("TORQUED_PROTOC", "protoc", "protobuf-compiler"),
            f"--proto_path={root}",
            f"--python_out={out}",
            f"--pyi_out={out}",
            f"--grpc_python_out={out}",
            f"--plugin=protoc-gen-grpc_python={plugin}",
            *protos,
        ]
        self.announce(" ".join(command), level=2)
        subprocess.run(command, check=True)
        (out / PACKAGE_PROTOS / "__init__.py").write_text(
            '"""Generated torqued.v1 messages (*_pb2) and gRPC stubs (*_pb2_grpc)."""\n'
        )


setup(cmdclass={"build_py": BuildPyWithStubs})
