"""Packed doubles between numpy and the wire: a DynamicsService (or ControlService) call's
repeated double fields are encoded and decoded as raw little-endian bytes, the rest by protobuf."""

from __future__ import annotations

from types import ModuleType
from typing import Any, Iterable, Iterator

import grpc
import numpy as np
from google.protobuf.message import Message

from torqued.results import Array
from torqued.v1 import dynamics_pb2


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, pos
        shift += 7


def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def fields_of(data: bytes) -> Iterator[tuple[int, int, int, int, int]]:
    """The top-level fields of a serialized message: (number, wire type, where the field starts,
    where its value starts, where it ends)."""
    pos = 0
    while pos < len(data):
        start = pos
        key, pos = _read_varint(data, pos)
        number, wire_type = key >> 3, key & 7
        value = pos
        if wire_type == 0:
            _, pos = _read_varint(data, pos)
        elif wire_type == 1:
            pos += 8
        elif wire_type == 2:
            length, value = _read_varint(data, pos)
            pos = value + length
        elif wire_type == 5:
            pos += 4
        else:
            raise ValueError(f"wire type {wire_type}")
        yield number, wire_type, start, value, pos


class Reply:
    """A response: its repeated double fields as float64 arrays, its other fields as parsed."""

    def __init__(self, message: Message, arrays: dict[str, Array]) -> None:
        self._message = message
        self._arrays = arrays

    def __getattr__(self, name: str) -> Any:
        if name in self._arrays:
            return self._arrays[name]
        return getattr(self._message, name)


class PackedCall:
    """A unary RPC whose repeated double fields go between numpy and the wire directly; its
    messages are the classes of `messages`, the generated module of its service (dynamics_pb2
    unless said).

    protobuf's Python containers cost about a microsecond per number each way (seconds for a
    batch of 10^4 mass matrices); packed doubles are plain little-endian bytes, so they are
    appended to the serialized scalar fields on the way out (fields may come in any order) and
    cut out of the response with np.frombuffer on the way in.

    `borrowed` names response fields that the client reads once itself and never hands out
    (Linearize's and Rollout's velocity rows, from which it assembles Fx and Fu:
    _euler_step_jacobians.assembled_from): the unary call leaves them as
    read-only views of the received bytes instead of copying them out (a 3.4 MB answer's copy
    took 0.3 ms).
    """

    def __init__(
        self,
        channel: grpc.Channel,
        method: Any,
        borrowed: Iterable[str] = (),
        messages: ModuleType = dynamics_pb2,
    ) -> None:
        self.request_class = getattr(messages, method.input_type.name)
        self.response_class = getattr(messages, method.output_type.name)
        self.request_doubles = {f.name: f.number for f in repeated_doubles(method.input_type)}
        self.response_doubles = {f.number: f.name for f in repeated_doubles(method.output_type)}
        self.borrowed = frozenset(borrowed)
        self.rpc = channel.unary_unary(
            f"/{method.containing_service.full_name}/{method.name}",
            request_serializer=self.encode,
            response_deserializer=lambda data: self.decode(data, self.borrowed),
        )

    def request(self, **fields: Any) -> tuple[Message, dict[str, Array]]:
        arrays = {k: fields.pop(k) for k in list(fields) if k in self.request_doubles}
        return self.request_class(**fields), arrays

    def encode(self, request: tuple[Message | bytes, dict[str, Array]]) -> bytes:
        """The request's message (or its bytes, serialized already) and its arrays, on the
        wire."""
        message, arrays = request
        parts = [message if isinstance(message, bytes) else message.SerializeToString()]
        for name, array in arrays.items():
            if array.size:
                data = np.ascontiguousarray(array, dtype="<f8").tobytes()
                parts += [varint(self.request_doubles[name] << 3 | 2), varint(len(data)), data]
        return b"".join(parts)

    def decode(self, data: bytes, borrowed: frozenset[str] = frozenset()) -> Reply:
        """The reply in `data`; the fields named in `borrowed` may be views of it."""
        chunks: dict[str, list[Array]] = {name: [] for name in self.response_doubles.values()}
        rest = bytearray()
        for number, wire_type, start, value, end in fields_of(data):
            name = self.response_doubles.get(number)
            if name is not None and wire_type in (1, 2):
                count = (end - value) // 8
                chunks[name].append(np.frombuffer(data, "<f8", count=count, offset=value))
            else:
                rest += data[start:end]
        arrays = {
            name: (
                parts[0] if len(parts) == 1 and name in borrowed else np.concatenate(parts)
            ).astype(np.float64, copy=False)
            if parts
            else np.empty(0)
            for name, parts in chunks.items()
        }
        return Reply(self.response_class.FromString(bytes(rest)), arrays)


def repeated_doubles(message: Any) -> list[Any]:
    return [f for f in message.fields if f.type == f.TYPE_DOUBLE and f.label == f.LABEL_REPEATED]
