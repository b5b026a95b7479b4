"""Cutting one batched DynamicsService call into parts of contiguous states, and joining the
parts' replies back into the reply one call would have given (Client's split_parts option).

Generic over the messages, by their shape in proto/torqued/v1/dynamics.proto: a request's
batch_size and its repeated double fields hold states (each field batch_size x width, row after
row), its other fields apply to every state; a reply's repeated numbers hold states in the same
order, its strings and messages (frame names, constraint rows) describe the whole call.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

Array = npt.NDArray[np.float64]
# A message with its repeated double fields apart, as float64 arrays (see client._PackedCall).
Packed = tuple[Message, dict[str, Array]]


def split_states(states: int, max_parts: int, min_states: int) -> list[tuple[int, int]]:
    """At most max_parts ranges [begin, end) of at least min_states states, sizes differing by
    at most one; a single range when the batch is too small to split."""
    parts = max(1, min(max_parts, states // max(min_states, 1)))
    ranges, begin = [], 0
    for k in range(parts):
        size = states // parts + (1 if k < states % parts else 0)
        ranges.append((begin, begin + size))
        begin += size
    return ranges


def split_request(request: Packed, max_parts: int, min_states: int) -> list[Packed]:
    """The parts of a request; the request itself alone when it is not split (too small, or a
    field's size that is not a multiple of batch_size, which the server then rejects)."""
    message, arrays = request
    states = message.batch_size
    ranges = split_states(states, max_parts, min_states)
    if len(ranges) < 2 or any(len(array) % states for array in arrays.values()):
        return [request]
    parts = []
    for begin, end in ranges:
        part = type(message)()
        part.CopyFrom(message)
        part.batch_size = end - begin
        sliced = {}
        for name, array in arrays.items():
            width = len(array) // states
            sliced[name] = array[begin * width : end * width]
        parts.append((part, sliced))
    return parts


def _describes_the_call(field: Any) -> bool:
    return field.label == FieldDescriptor.LABEL_REPEATED and field.cpp_type in (
        FieldDescriptor.CPPTYPE_STRING,
        FieldDescriptor.CPPTYPE_MESSAGE,
    )


def join_replies(replies: list[Packed]) -> Packed:
    """The parts' replies, in state order, as one reply."""
    first, _ = replies[0]
    whole = type(first)()
    whole.CopyFrom(first)
    whole_call = [f.name for f in first.DESCRIPTOR.fields if _describes_the_call(f)]
    for message, _ in replies[1:]:
        part = type(message)()
        part.CopyFrom(message)
        # Merging concatenates repeated fields: right for the states, wrong for what every part
        # repeats about the whole call.
        for name in whole_call:
            part.ClearField(name)
        whole.MergeFrom(part)
    whole.batch_size = sum(message.batch_size for message, _ in replies)
    arrays = {
        name: np.concatenate([arrays[name] for _, arrays in replies]) for name in replies[0][1]
    }
    return whole, arrays
