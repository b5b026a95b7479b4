"""The channel under a Client: TLS and tokens, deadlines, retries with backoff, re-registration
of the models it registered, batches split over replicas, the health check, sessions and Echo."""

from __future__ import annotations

import concurrent.futures
import random
import threading
import time
import weakref
from typing import Any, Callable, Optional, Sequence, TypeVar

import grpc
import numpy as np
import numpy.typing as npt
from google.protobuf.message import Message

from torqued import _split
from torqued._allocator import keep_freed_memory as keep_glibc_freed_memory
from torqued._conversions import pem
from torqued._euler_step_jacobians import assembled_from
from torqued._wire import PackedCall, Reply
from torqued.errors import Error
from torqued.results import Array
from torqued.session import Session, SessionCodec
from torqued.v1 import dynamics_pb2, model_pb2, model_pb2_grpc

Response = TypeVar("Response", bound=Message)

# Rounds of re-registration after a NOT_FOUND (see Client._on_model).
_REREGISTER_ROUNDS = 3


# How long close() waits for grpcio's connectivity poller to end: it looks whether anything is
# still subscribed every 0.2 s.
_POLLER_END_SECONDS = 2.0


class _RetryPolling:
    """Keeps a channel's timers running while a call waits to be sent again.

    grpcio runs a channel's timers, the reconnect backoff among them, only while a thread polls
    the channel; during a retry's wait nothing does, and a connection that failed would be tried
    again only every ~5 s. Watching the connectivity state starts grpcio's poller thread, which
    polls. The channel is watched only while a retry waits, not for the client's life: the poller
    polls the sockets the calls use too, so a poller left running takes over receiving their
    answers, one more hand-off between threads per answer, and it takes CPU from the calls and
    from a server on the same machine (a 50-knot ur5 Solve took 3.7 ms through a watched channel,
    3.3 ms through one that is not)."""

    def __init__(self, channel: grpc.Channel) -> None:
        self._channel = channel
        self._lock = threading.Lock()
        self._pollers: list[threading.Thread] = []

    def sleep(self, seconds: float) -> None:
        """Waits `seconds` with the channel polled."""

        def watch(_state: grpc.ChannelConnectivity) -> None:
            pass

        with self._lock:
            before = set(threading.enumerate())
            self._channel.subscribe(watch, try_to_connect=False)
            started = [t for t in threading.enumerate() if t not in before]
            self._pollers = [t for t in self._pollers if t.is_alive()] + started
        try:
            time.sleep(seconds)
        finally:
            self._channel.unsubscribe(watch)

    def close(self) -> None:
        """Waits for the poller to end, then closes the channel. A poller still running when the
        interpreter finalizes is frozen there, the channel's lock held, and the channel's
        deallocation then waits for that lock forever: the process never exits. Unsubscribed,
        the poller ends at its next look (closing the channel first would have it fail on the
        closed channel)."""
        with self._lock:
            pollers, self._pollers = self._pollers, []
        for thread in pollers:
            thread.join(_POLLER_END_SECONDS)
        self._channel.close()


class Connection:
    """The channel and the call machinery every group of Client methods shares."""

    def __init__(
        self,
        target: str,
        *,
        timeout: Optional[float] = 30.0,
        retries: int = 4,
        initial_backoff: float = 0.1,
        max_backoff: float = 5.0,
        round_robin: bool = True,
        credentials: Optional[grpc.ChannelCredentials] = None,
        root_certificates: Optional[bytes | str] = None,
        certificate_chain: Optional[bytes | str] = None,
        private_key: Optional[bytes | str] = None,
        token: Optional[str] = None,
        channel_options: Sequence[tuple[str, Any]] = (),
        split_parts: int = 1,
        split_min_states: int = 1000,
        keep_freed_memory: bool = False,
    ) -> None:
        """Opens a channel; connecting happens on the first call.

        Args:
            target: a gRPC target, e.g. "localhost:50051" or "dns:///torqued.example:50051".
            timeout: default deadline of a call, retries included, in seconds; None: no deadline.
            retries: how many times a call answered UNAVAILABLE or CANCELLED is sent again.
            initial_backoff: wait before the first retry, seconds; doubled after each retry (with
                +-20% jitter), up to max_backoff. The channel reconnects on the same schedule.
            max_backoff: longest wait between two attempts, seconds.
            round_robin: spread calls over every address the target resolves to (gRPC's
                round_robin policy) rather than sticking to the first that connects.
            credentials: TLS credentials (grpc.ssl_channel_credentials(...)); None: plaintext,
                unless root_certificates or certificate_chain is given.
            root_certificates: TLS, the PEM certificates of the CAs that sign the server's
                certificate, e.g. open("ca.pem", "rb").read(); None with a certificate_chain:
                the system's roots.
            certificate_chain: mutual TLS: this client's PEM certificate chain.
            private_key: the PEM private key of certificate_chain.
            token: a bearer token for servers started with --token-file or
                --admin-token-file; None: no token.
            channel_options: extra gRPC channel arguments, applied last (for example
                ("grpc.ssl_target_name_override", "torqued.internal") to check the server's
                certificate against another name than the target's host).

            split_parts: large batches over several replicas: a dynamics batch is cut into at
                most this many parts of contiguous states, sent at once (round_robin hands each
                to the next replica) and joined back in order, bitwise what one call returns.
                1: never split.
            split_min_states: the fewest states in a part.
            keep_freed_memory: opt in to having glibc keep freed memory for the next answer, as
                torqued does (mallopt: no mmap below 32 MiB, no trim below 256 MiB). It changes
                the allocator of the whole process, the caller's own allocations included, for
                good, so it is off unless asked: with glibc's defaults each large answer's
                buffers are unmapped when freed and their pages faulted in again by the next
                call, which costs more than the call on machines with slow page faults (a
                100-knot talos_reduced Linearize, 3.4 MB: 45 ms instead of 8 ms on a virtual
                machine where a fault takes 12 us). False (the default): malloc is left as it is.

        Raises:
            ValueError: credentials given together with PEM bytes, or a certificate chain
                without its private key (or a key without its chain).
        """
        if (certificate_chain is None) != (private_key is None):
            raise ValueError("certificate_chain and private_key go together: give both or neither")
        if root_certificates is not None or certificate_chain is not None:
            if credentials is not None:
                raise ValueError("give credentials or PEM certificates, not both")
            credentials = grpc.ssl_channel_credentials(
                pem(root_certificates), pem(private_key), pem(certificate_chain)
            )
        if keep_freed_memory:
            keep_glibc_freed_memory()
        self._metadata = None if not token else (("authorization", f"Bearer {token}"),)
        options: list[tuple[str, Any]] = [
            ("grpc.max_send_message_length", -1),
            ("grpc.max_receive_message_length", -1),
            ("grpc.initial_reconnect_backoff_ms", max(1, int(initial_backoff * 1000))),
            ("grpc.max_reconnect_backoff_ms", max(1, int(max_backoff * 1000))),
        ]
        if round_robin:
            options.append(("grpc.lb_policy_name", "round_robin"))
        options.extend(channel_options)
        if credentials is None:
            self._channel = grpc.insecure_channel(target, options=options)
        else:
            self._channel = grpc.secure_channel(target, credentials, options=options)
        self._retry_polling = _RetryPolling(self._channel)
        self._timeout = timeout
        self._retries = retries
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._models = model_pb2_grpc.ModelServiceStub(self._channel)
        service = dynamics_pb2.DESCRIPTOR.services_by_name["DynamicsService"]
        self._calls = {
            m.name: PackedCall(self._channel, m, assembled_from(m))
            for m in service.methods
            if not (m.client_streaming or m.server_streaming)
        }
        self._session_codec = SessionCodec(self._calls)
        self._session = self._channel.stream_stream(
            f"/{service.full_name}/Session", response_deserializer=self._session_codec.decode
        )
        self._sources: dict[str, model_pb2.RegisterModelRequest] = {}
        self._sources_lock = threading.Lock()
        self._split_parts = split_parts
        self._split_min_states = split_min_states

        # A script need not call close() (see _RetryPolling.close): the channel is closed when the
        # client is collected, or at exit if it is still alive (weakref.finalize runs before the
        # interpreter's teardown). The finalizer holds the channel, not the client.
        self._close = weakref.finalize(self, self._retry_polling.close)

    def close(self) -> None:
        """Closes the channel; calls in flight are cancelled. Idempotent."""
        self._close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------------------------------------
    # Calls: deadlines, retries, re-registration.

    def _deadline(self, timeout: Optional[float]) -> Optional[float]:
        budget = self._timeout if timeout is None else timeout
        return None if budget is None else time.monotonic() + budget

    def _invoke(
        self,
        method: str,
        rpc: Callable[..., Response],
        request: Message,
        deadline: Optional[float],
    ) -> Response:
        backoff = self._initial_backoff
        attempt = 0
        while True:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                return rpc(request, timeout=remaining, metadata=self._metadata)
            except grpc.RpcError as error:
                code, details = error.code(), error.details() or ""
            wait = min(backoff, self._max_backoff) * random.uniform(0.8, 1.2)
            # CANCELLED comes from a server shutting down (it cancels the calls it has received
            # but not started); this client cancels nothing, and every RPC is idempotent.
            retryable = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.CANCELLED)
            retry = code in retryable and attempt < self._retries
            if not retry or (deadline is not None and time.monotonic() + wait >= deadline):
                raise Error(code, details, method)
            self._retry_polling.sleep(wait)
            backoff *= 2
            attempt += 1

    def _on_model(
        self,
        method: str,
        rpc: Callable[..., Response],
        request: Any,
        model_id: str,
        timeout: Optional[float],
    ) -> Response:
        """Invokes a call on model_id, re-registering a remembered model on NOT_FOUND.

        Under round_robin a registration and the retry after it reach different replicas, so
        round r registers r times in a row before retrying: with up to _REREGISTER_ROUNDS
        replicas, one round's registrations reach every replica the retry can reach.
        """
        deadline = self._deadline(timeout)
        try:
            return self._invoke(method, rpc, request, deadline)
        except Error as error:
            last = error
        with self._sources_lock:
            source = self._sources.get(model_id)
        if last.code != grpc.StatusCode.NOT_FOUND or source is None:
            raise last
        for rounds in range(1, _REREGISTER_ROUNDS + 1):
            for _ in range(rounds):
                model = self._register_request(source, deadline)
                if model.id != model_id:
                    raise Error(
                        grpc.StatusCode.NOT_FOUND,
                        f"{last.message}; registering the model again gave id {model.id}",
                        method,
                    )
            try:
                return self._invoke(method, rpc, request, deadline)
            except Error as error:
                if error.code != grpc.StatusCode.NOT_FOUND:
                    raise
                last = error
        raise last

    def _compute(self, name: str, model_id: str, timeout: Optional[float], **fields: Any) -> Any:
        """Invokes DynamicsService/<name> with `fields` (float64 arrays for the double fields)."""
        call = self._calls[name]
        request = call.request(model_id=model_id, **fields)
        method = f"DynamicsService/{name}"
        parts = _split.split_request(request, self._split_parts, self._split_min_states)
        if len(parts) == 1:
            return self._on_model(method, call.rpc, request, model_id, timeout)
        with concurrent.futures.ThreadPoolExecutor(len(parts)) as pool:
            replies = list(
                pool.map(
                    lambda part: self._on_model(method, call.rpc, part, model_id, timeout), parts
                )
            )
        return Reply(*_split.join_replies([(r._message, r._arrays) for r in replies]))

    def _register_request(
        self, request: model_pb2.RegisterModelRequest, deadline: Optional[float]
    ) -> model_pb2.Model:
        response = self._invoke(
            "ModelService/RegisterModel", self._models.RegisterModel, request, deadline
        )
        with self._sources_lock:
            self._sources[response.model.id] = request
        return response.model

    def health(self, *, timeout: Optional[float] = None) -> str:
        """The server's grpc.health.v1 status: "SERVING", "NOT_SERVING", ... (no retries).

        Raises:
            Error: UNAVAILABLE when nothing answers, DEADLINE_EXCEEDED, ...
        """
        check = self._channel.unary_unary(
            "/grpc.health.v1.Health/Check",
            request_serializer=lambda request: request,
            response_deserializer=lambda response: response,
        )
        try:
            budget = self._timeout if timeout is None else timeout
            # HealthCheckRequest{service: ""} encodes to no bytes; the response is one enum
            # field (number 1, varint): b"\x08" + status, status < 128.
            response = check(b"", timeout=budget)
        except grpc.RpcError as error:
            raise Error(error.code(), error.details() or "", "Health/Check") from None
        status = response[1] if response[:1] == b"\x08" else 0
        return ["UNKNOWN", "SERVING", "NOT_SERVING", "SERVICE_UNKNOWN"][min(status, 3)]

    def session(self, model_id: str = "", *, timeout: Optional[float] = None) -> Session:
        """Opens a Session stream (see Session); use it as a context manager.

        Args:
            model_id: the stream's model, sent with the first message; empty: none (each
                message then names its own with send's model_id).
            timeout: deadline of the whole stream in seconds; None: the client's.
        """
        budget = self._timeout if timeout is None else timeout
        return Session(self._session, self._session_codec, model_id, budget, self._metadata)

    def echo(
        self,
        payload: bytes = b"",
        values: Optional[npt.ArrayLike] = None,
        *,
        response_values: int = 0,
        timeout: Optional[float] = None,
    ) -> tuple[bytes, Array]:
        """Sends bytes and numbers that come back untouched (the transport alone, no compute).

        With response_values > 0 the answer carries that many zeros instead of the numbers: the
        floor of a call whose request and answer differ in size.
        """
        numbers = np.empty(0) if values is None else np.asarray(values, dtype=np.float64).ravel()
        call = self._calls["Echo"]
        request = call.request(payload=payload, values=numbers, response_values=response_values)
        response = self._invoke("DynamicsService/Echo", call.rpc, request, self._deadline(timeout))
        return response.payload, response.values
