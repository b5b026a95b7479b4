"""A raw HTTP/2 client for hostile-transport tests: it writes frames as a hostile client would
(ignoring the server's stream limit, resetting streams at once, refusing to open its receive
window, compressing a bomb) and also speaks enough gRPC for an honest unary call, so that tests
can check that other clients are still served.

Frames are built with hyperframe and header blocks with hpack (Debian's python3-h2 brings both),
not with h2's state machine, which would refuse to misbehave.
"""

import socket
import struct
import threading
import time

import hpack
from hyperframe.frame import (
    ContinuationFrame,
    DataFrame,
    Frame,
    GoAwayFrame,
    HeadersFrame,
    PingFrame,
    RstStreamFrame,
    SettingsFrame,
    WindowUpdateFrame,
)

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DEFAULT_WINDOW = 65535
MAX_FRAME = 16384
CANCEL = 0x8


def grpc_message(payload, compressed=False):
    """A gRPC length-prefixed message."""
    return struct.pack(">BI", 1 if compressed else 0, len(payload)) + payload


def varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def proto_field(number, wire_type, payload):
    """One protobuf field: a varint (wire type 0) or length-delimited bytes (wire type 2)."""
    key = varint((number << 3) | wire_type)
    if wire_type == 0:
        return key + varint(payload)
    return key + varint(len(payload)) + payload


def proto_fields(data):
    """The (number, value) pairs of a protobuf message: varints as ints, length-delimited fields
    as bytes (fixed-width ones are not needed here)."""
    fields, i = [], 0

    def read_varint():
        nonlocal i
        value = shift = 0
        while True:
            byte = data[i]
            i += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                return value

    while i < len(data):
        key = read_varint()
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            fields.append((number, read_varint()))
        elif wire_type == 2:
            length = read_varint()
            fields.append((number, data[i : i + length]))
            i += length
        elif wire_type == 1:
            i += 8
        elif wire_type == 5:
            i += 4
        else:
            raise ValueError(f"wire type {wire_type}")
    return fields


def packed_doubles(values):
    return struct.pack(f"<{len(values)}d", *values)


class StreamState:
    def __init__(self):
        self.headers = []
        self.trailers = []
        self.data = bytearray()
        self.data_bytes = 0
        self.reset = None
        self.closed = threading.Event()
        self.send_window = DEFAULT_WINDOW


class RawConnection:
    """One HTTP/2 connection to 127.0.0.1:port.

    settings: the client's SETTINGS (e.g. {SettingsFrame.INITIAL_WINDOW_SIZE: 0} never lets the
    server send a byte of DATA). keep_data: keep received DATA (for honest calls) or only count
    it. open_window: send WINDOW_UPDATEs for what was received (an honest reader). source: the
    loopback address to connect from (another host, to the server's per-address limits)."""

    def __init__(self, port, settings=None, keep_data=True, open_window=True, timeout=10.0,
                 source=None):
        self.sock = socket.create_connection(
            ("127.0.0.1", port), timeout=timeout,
            source_address=(source, 0) if source else None)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.settimeout(None)
        self.encoder = hpack.Encoder()
        self.decoder = hpack.Decoder()
        self.decoder.max_allowed_table_size = 1 << 16
        self.keep_data = keep_data
        self.open_window = open_window
        self.lock = threading.Condition()
        self.write_lock = threading.Lock()
        self.streams = {}
        self.next_stream_id = 1
        self.connection_window = DEFAULT_WINDOW
        self.peer_initial_window = DEFAULT_WINDOW
        self.peer_settings = {}
        self.settings_received = threading.Event()
        self.goaway = None
        self.closed = threading.Event()
        self.frames_received = 0
        self._continuation = None
        self.send(PREFACE + SettingsFrame(0, settings=settings or {}).serialize())
        self.reader = threading.Thread(target=self._read_loop, daemon=True)
        self.reader.start()

    # --- writing -------------------------------------------------------------------------
    def wait_settings(self, timeout=5.0):
        """Waits for the server's SETTINGS; False when the server closed the connection first (it
        refused it) or the timeout passed."""
        end = time.monotonic() + timeout
        while not self.settings_received.wait(0.01):
            if self.closed.is_set() or time.monotonic() > end:
                return False
        return True

    def send(self, data):
        with self.write_lock:
            self.sock.sendall(data)

    def _reply(self, data):
        """A frame the protocol owes the server (an ACK, a WINDOW_UPDATE): lost with the
        connection if the server has closed it."""
        try:
            self.send(data)
        except OSError:
            pass

    def new_stream_id(self):
        with self.lock:
            stream_id = self.next_stream_id
            self.next_stream_id += 2
            self.streams[stream_id] = StreamState()
            self.streams[stream_id].send_window = self.peer_initial_window
            return stream_id

    def headers_frame(self, stream_id, path, end_stream=False, extra=(), end_headers=True):
        block = self.encoder.encode(
            [
                (":method", "POST"),
                (":scheme", "http"),
                (":path", path),
                (":authority", "localhost"),
                ("content-type", "application/grpc"),
                ("te", "trailers"),
                *extra,
            ]
        )
        flags = (["END_HEADERS"] if end_headers else []) + (["END_STREAM"] if end_stream else [])
        return HeadersFrame(stream_id, data=block, flags=flags).serialize()

    def send_headers(self, stream_id, path, end_stream=False, extra=()):
        self.send(self.headers_frame(stream_id, path, end_stream, extra))

    def send_data(self, stream_id, payload, end_stream=True, respect_windows=True, timeout=30.0):
        """DATA frames within the server's flow-control windows (waiting for WINDOW_UPDATEs)."""
        view = memoryview(payload)
        offset = 0
        deadline = time.monotonic() + timeout
        while True:
            chunk = min(MAX_FRAME, len(view) - offset)
            if respect_windows and chunk > 0:
                with self.lock:
                    stream = self.streams[stream_id]
                    while min(self.connection_window, stream.send_window) <= 0:
                        if self.closed.is_set() or stream.closed.is_set():
                            return False
                        remaining = deadline - time.monotonic()
                        if remaining <= 0:
                            return False
                        self.lock.wait(min(remaining, 0.5))
                    chunk = min(chunk, self.connection_window, stream.send_window)
                    self.connection_window -= chunk
                    stream.send_window -= chunk
            last = offset + chunk >= len(view)
            flags = ["END_STREAM"] if (last and end_stream) else []
            self.send(DataFrame(stream_id, data=bytes(view[offset : offset + chunk]), flags=flags).serialize())
            offset += chunk
            if last:
                return True

    @staticmethod
    def data_frame(stream_id, payload, end_stream=True):
        """One DATA frame, whatever the windows allow."""
        return DataFrame(stream_id, data=payload, flags=["END_STREAM"] if end_stream else []).serialize()

    @staticmethod
    def rst_frame(stream_id, code=CANCEL):
        return RstStreamFrame(stream_id, error_code=code).serialize()

    def send_rst(self, stream_id, code=CANCEL):
        self.send(self.rst_frame(stream_id, code))

    # --- an honest unary call --------------------------------------------------------------
    def unary(self, path, request, timeout=5.0, metadata=()):
        """Sends one gRPC request and waits for its end; returns (grpc-status, message bytes),
        or (None, b"") when no answer came within `timeout`."""
        stream_id = self.new_stream_id()
        extra = [("grpc-timeout", f"{int(timeout * 1000)}m"), *metadata]
        self.send_headers(stream_id, path, extra=extra)
        if not self.send_data(stream_id, grpc_message(request), timeout=timeout):
            return None, b""
        stream = self.streams[stream_id]
        if not stream.closed.wait(timeout):
            return None, b""
        status = None
        for name, value in stream.trailers or stream.headers:
            if name == "grpc-status":
                status = int(value)
        body = bytes(stream.data)
        return status, body[5:] if len(body) >= 5 else b""

    # --- reading ---------------------------------------------------------------------------
    def _recv_exact(self, n):
        chunks = []
        while n > 0:
            chunk = self.sock.recv(min(n, 1 << 20))
            if not chunk:
                raise ConnectionError("closed")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def _read_loop(self):
        try:
            while True:
                header = self._recv_exact(9)
                frame, length = Frame.parse_frame_header(memoryview(header))
                body = self._recv_exact(length) if length else b""
                frame.parse_body(memoryview(body))
                self.frames_received += 1
                self._on_frame(frame)
        except (ConnectionError, OSError, ValueError):
            pass
        finally:
            # The server closed the connection: a send blocked on its full window would otherwise
            # wait for TCP to give up (minutes), and the attack it belongs to with it.
            try:
                self.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass
            self.closed.set()
            with self.lock:
                for stream in self.streams.values():
                    stream.closed.set()
                self.lock.notify_all()

    def _stream(self, stream_id):
        with self.lock:
            return self.streams.setdefault(stream_id, StreamState())

    def _on_frame(self, frame):
        if isinstance(frame, SettingsFrame):
            if "ACK" not in frame.flags:
                with self.lock:
                    self.peer_settings.update(frame.settings)
                    new_window = frame.settings.get(SettingsFrame.INITIAL_WINDOW_SIZE)
                    if new_window is not None:
                        delta = new_window - self.peer_initial_window
                        self.peer_initial_window = new_window
                        for stream in self.streams.values():
                            stream.send_window += delta
                    self.lock.notify_all()
                self._reply(SettingsFrame(0, flags=["ACK"]).serialize())
                self.settings_received.set()
        elif isinstance(frame, PingFrame):
            if "ACK" not in frame.flags:
                self._reply(PingFrame(0, opaque_data=frame.opaque_data, flags=["ACK"]).serialize())
        elif isinstance(frame, WindowUpdateFrame):
            with self.lock:
                if frame.stream_id == 0:
                    self.connection_window += frame.window_increment
                elif frame.stream_id in self.streams:
                    self.streams[frame.stream_id].send_window += frame.window_increment
                self.lock.notify_all()
        elif isinstance(frame, GoAwayFrame):
            self.goaway = (frame.last_stream_id, frame.error_code, frame.additional_data)
        elif isinstance(frame, (HeadersFrame, ContinuationFrame)):
            if isinstance(frame, HeadersFrame):
                self._continuation = (frame.stream_id, bytearray(frame.data), "END_STREAM" in frame.flags)
            else:
                self._continuation[1].extend(frame.data)
            if "END_HEADERS" in frame.flags:
                stream_id, block, end_stream = self._continuation
                self._continuation = None
                headers = [(k.decode() if isinstance(k, bytes) else k, v.decode() if isinstance(v, bytes) else v)
                           for k, v in self.decoder.decode(bytes(block), raw=True)]
                stream = self._stream(stream_id)
                if stream.headers:
                    stream.trailers = headers
                else:
                    stream.headers = headers
                if end_stream:
                    stream.closed.set()
        elif isinstance(frame, DataFrame):
            stream = self._stream(frame.stream_id)
            stream.data_bytes += len(frame.data)
            if self.keep_data:
                stream.data.extend(frame.data)
            if self.open_window and frame.flow_controlled_length:
                increment = frame.flow_controlled_length
                self._reply(
                    WindowUpdateFrame(0, window_increment=increment).serialize()
                    + WindowUpdateFrame(frame.stream_id, window_increment=increment).serialize()
                )
            if "END_STREAM" in frame.flags:
                stream.closed.set()
        elif isinstance(frame, RstStreamFrame):
            stream = self._stream(frame.stream_id)
            stream.reset = frame.error_code
            stream.closed.set()

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.reader.join(timeout=5)


HEALTH_CHECK = "/grpc.health.v1.Health/Check"
LIST_MODELS = "/torqued.v1.ModelService/ListModels"
ECHO = "/torqued.v1.DynamicsService/Echo"
INVERSE_DYNAMICS = "/torqued.v1.DynamicsService/InverseDynamics"
SERVING = b"\x08\x01"


def model_ids(port, metadata=()):
    """Name -> id of the models a server lists (its first page)."""
    connection = RawConnection(port)
    try:
        status, body = connection.unary(LIST_MODELS, b"", metadata=metadata)
        assert status == 0, status
    finally:
        connection.close()
    ids = {}
    for number, summary in proto_fields(body):
        if number == 1:
            fields = dict(proto_fields(summary))
            ids[fields[2].decode()] = fields[1].decode()
    return ids


def health(port, timeout=1.0, source=None):
    """The health service's answer on a new connection: (seconds taken, serving?, why not)."""
    start = time.monotonic()
    try:
        connection = RawConnection(port, timeout=timeout, source=source)
    except OSError as error:
        return time.monotonic() - start, False, f"no connection: {error}"
    try:
        status, body = connection.unary(HEALTH_CHECK, b"", timeout=timeout)
        if status is None:
            why = "connection closed" if connection.closed.is_set() else f"no answer in {timeout} s"
        else:
            why = f"grpc-status {status}, body {body!r}"
        return time.monotonic() - start, status == 0 and body == SERVING, why
    except OSError as error:  # the server closed the connection
        return time.monotonic() - start, False, f"connection lost: {error}"
    finally:
        connection.close()
