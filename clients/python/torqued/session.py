"""Client.session(): a DynamicsService.Session stream, requests answered in order."""

from __future__ import annotations

import collections
import queue
from typing import Any, Iterator, NamedTuple, Optional

import grpc
import numpy as np
from google.protobuf.message import Message

from torqued._conversions import Batch
from torqued._wire import PackedCall, Reply, fields_of, varint
from torqued.errors import Error
from torqued.results import Array
from torqued.v1 import dynamics_pb2

_STATUS_CODES = {code.value[0]: code for code in grpc.StatusCode}


class OutgoingMessages:
    """A stream's messages for grpcio's request thread: put() queues one, end() ends the stream
    (a half-close); iterating stops there, or once `call` (set when the stream opens) is done."""

    # How often the request thread looks whether the call has ended.
    POLL_SECONDS = 0.5

    def __init__(self) -> None:
        self._queue: queue.Queue[Optional[bytes]] = queue.Queue()
        self.call: Any = None

    def put(self, message: bytes) -> None:
        self._queue.put(message)

    def end(self) -> None:
        self._queue.put(None)

    def __iter__(self) -> Iterator[bytes]:
        while True:
            try:
                message = self._queue.get(timeout=self.POLL_SECONDS)
            except queue.Empty:
                if self.call is not None and self.call.done():
                    return
                continue
            if message is None:
                return
            yield message


class SessionReply(NamedTuple):
    """The answer to one message of a Session.

    Attributes:
        sequence: the number Session.send returned for the message.
        method: the RPC whose request the message carried, e.g. "InverseDynamics".
        response: the method's response (None when the message failed), with its repeated
            double fields as float64 arrays: one state per row, (batch, n), when the message's q
            was a batch, flat for a single state or no q. Per-state matrices stay flattened
            row-major (reshape to (batch, nv, nv)).
        error: why the message failed (the stream goes on), else None.
    """

    sequence: int
    method: str
    response: Optional[Any]
    error: Optional[Error]


class SessionCodec:
    """SessionRequest and SessionResponse bytes around the unary calls' packed requests and
    replies: a request's bytes are the field of the SessionRequest oneof that carries it."""

    def __init__(self, calls: dict[str, PackedCall]) -> None:
        def numbers(message: Any) -> dict[str, int]:
            return {f.message_type.full_name: f.number for f in message.fields if f.message_type}

        requests = numbers(dynamics_pb2.SessionRequest.DESCRIPTOR)
        responses = numbers(dynamics_pb2.SessionResponse.DESCRIPTOR)
        self.calls = {
            name: (call, requests[call.request_class.DESCRIPTOR.full_name])
            for name, call in calls.items()
            if call.request_class.DESCRIPTOR.full_name in requests
        }
        self.replies = {
            responses[call.response_class.DESCRIPTOR.full_name]: call
            for call, _ in self.calls.values()
        }

    def encode(
        self, name: str, request: tuple[Message, dict[str, Array]], sequence: int, model_id: str
    ) -> bytes:
        call, number = self.calls[name]
        inner = call.encode(request)
        head = dynamics_pb2.SessionRequest(model_id=model_id, sequence=sequence)
        return head.SerializeToString() + varint(number << 3 | 2) + varint(len(inner)) + inner

    def decode(self, data: bytes) -> tuple[dynamics_pb2.SessionResponse, Optional[Reply]]:
        reply = None
        rest = bytearray()
        for number, wire_type, start, value, end in fields_of(data):
            call = self.replies.get(number)
            if call is not None and wire_type == 2:
                reply = call.decode(data[value:end])
            else:
                rest += data[start:end]
        return dynamics_pb2.SessionResponse.FromString(bytes(rest)), reply


class Session:
    """A DynamicsService.Session stream (Client.session): requests sent in turn over one call,
    each answered in the order sent; a request that fails is answered with its error and the
    stream goes on.

    send() takes a DynamicsService method's name and its request's fields as the unary methods
    build them: numpy arrays (any shape, sent row-major) for the repeated double fields, with
    batch_size taken from q ((batch, nq), or one state (nq,)); proto values, dicts in proto JSON
    form or enum names for the others. Iterating the session yields a SessionReply per message,
    in order, until the stream ends: after close(), once every message is answered.

    The deadline (the client's timeout, or the session's own) bounds the whole stream; the
    client's token and TLS go with it. A stream is not retried and does not re-register models.
    One thread may send while another iterates.

    Example:
        with client.session(model_id=arm.id) as session:
            session.send("Gravity", q=q)
            session.send("InverseDynamics", q=q, v=v, a=a)
            gravity, inverse = next(session), next(session)
            tau = inverse.response.tau  # (batch, nv)
    """

    def __init__(
        self,
        rpc: grpc.StreamStreamMultiCallable,
        codec: SessionCodec,
        model_id: str,
        timeout: Optional[float],
        metadata: Any,
    ) -> None:
        self._codec = codec
        self._model_id = model_id
        self._messages = OutgoingMessages()
        # (sequence, method, rows of the batch or None) of each message not yet answered.
        self._pending: collections.deque[tuple[int, str, Optional[int]]] = collections.deque()
        self._sequence = 0
        self._closed = False
        self._call = rpc(iter(self._messages), timeout=timeout, metadata=metadata)
        self._messages.call = self._call

    def send(self, method: str, *, model_id: Optional[str] = None, **fields: Any) -> int:
        """Sends a request of `method` (e.g. "InverseDynamics") built from `fields`.

        Args:
            method: a unary method of DynamicsService.
            model_id: switch the stream to this model from this message on; the first message
                takes the session's model when not given.
            fields: the request's fields (see the class).

        Returns:
            The message's sequence number, which its reply carries.
        """
        if self._closed:
            raise ValueError("send: the session is closed")
        if method not in self._codec.calls:
            raise ValueError(f"send: {method!r} is not a method a Session carries")
        call, _ = self._codec.calls[method]
        rows = None
        batched = "batch_size" in call.request_class.DESCRIPTOR.fields_by_name
        if batched and fields.get("q") is not None:
            batch = Batch(fields["q"])
            fields.setdefault("batch_size", batch.size)
            rows = None if batch.single else batch.size
        for name in call.request_doubles:
            if name in fields:
                fields[name] = np.asarray(fields[name], dtype=np.float64).ravel()
        request = call.request(**fields)
        self._sequence += 1
        if model_id is None and self._sequence == 1:
            model_id = self._model_id
        data = self._codec.encode(method, request, self._sequence, model_id or "")
        self._pending.append((self._sequence, method, rows))
        self._messages.put(data)
        return self._sequence

    def close(self) -> None:
        """No more messages: the stream ends once those sent are answered."""
        if not self._closed:
            self._closed = True
            self._messages.end()

    def cancel(self) -> None:
        """Ends the stream now; replies not yet read are lost."""
        self.close()
        self._call.cancel()

    def __iter__(self) -> Session:
        return self

    def __next__(self) -> SessionReply:
        """The reply to the earliest message not yet answered.

        Raises:
            StopIteration: the stream ended, every message answered.
            Error: the stream failed (DEADLINE_EXCEEDED, UNAVAILABLE, UNAUTHENTICATED, ...).
        """
        try:
            message, reply = next(self._call)
        except grpc.RpcError as error:
            raise Error(error.code(), error.details() or "", "DynamicsService/Session") from None
        _, method, rows = self._pending.popleft()
        if reply is not None and rows is not None:
            reply = Reply(
                reply._message, {name: a.reshape(rows, -1) for name, a in reply._arrays.items()}
            )
        error = None
        if message.status.code != 0:
            code = _STATUS_CODES.get(message.status.code, grpc.StatusCode.UNKNOWN)
            error = Error(code, message.status.message, f"DynamicsService/{method}")
        return SessionReply(message.sequence, method, reply, error)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, exc_type: Any, *exc_info: object) -> None:
        """On an exception, cancels the stream; otherwise closes it, discards the replies not
        read and raises Error if the stream failed."""
        if exc_type is not None:
            self.cancel()
            return
        self.close()
        for _ in self:
            pass

