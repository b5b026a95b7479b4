"""torqued.Error: a call that failed, with its gRPC status and the server's message."""

from __future__ import annotations

import grpc


class Error(Exception):
    """A torqued call that failed: the gRPC status code and the server's message.

    Attributes:
        code: the gRPC status, e.g. grpc.StatusCode.NOT_FOUND or INVALID_ARGUMENT.
        message: the status message (the server names the field or model at fault).
        method: the RPC, e.g. "DynamicsService/Gravity".
    """

    def __init__(self, code: grpc.StatusCode, message: str, method: str) -> None:
        super().__init__(f"{method}: {code.name}: {message}")
        self.code = code
        self.message = message
        self.method = method
