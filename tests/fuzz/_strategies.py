"""Hypothesis strategies shared by the fuzzers: JSON values, JSON-RPC-shaped messages, byte mutations."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

# Scalars as JSON has them (orjson cannot write integers beyond 64 bits, nor NaN).
json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=12,
)

METHODS = [
    "ping",
    "initialize",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "completion/complete",
    "logging/setLevel",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "server/discover",
    "elicitation/create",
    "nope/unknown",
]
MISSING = object()  # a member left out of the message


def _member(values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.just(MISSING), values)


valid_ids = st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.text(max_size=12)
ids = st.one_of(
    valid_ids,
    valid_ids,
    valid_ids,
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.lists(st.integers(0, 9), max_size=2),
)
methods = st.one_of(
    st.sampled_from(METHODS),
    st.sampled_from(METHODS),
    st.sampled_from(METHODS),
    st.text(max_size=15),
    st.none(),
    st.integers(0, 99),
    st.lists(st.text(max_size=3)),
)
tool_params = st.fixed_dictionaries(
    {"name": st.sampled_from(["echo", "add", "shape", "missing", ""]) | st.integers(-5, 5)},
    optional={
        "arguments": st.dictionaries(st.sampled_from(["text", "a", "b", "payload", "x"]), json_values, max_size=3)
        | json_values
    },
)
params = st.one_of(
    st.dictionaries(st.text(max_size=10), json_values, max_size=4),
    tool_params,
    tool_params,
    json_values,
)


@st.composite
def messages(draw: st.DrawFn) -> dict[str, Any]:
    """Dicts shaped more or less like JSON-RPC messages: each member present, absent or wrong."""
    members = {
        "jsonrpc": "2.0"
        if draw(st.integers(0, 9)) < 8
        else draw(_member(st.sampled_from(["1.0", 2.0]) | json_scalars)),
        "id": draw(_member(ids)),
        "method": draw(_member(methods)),
        "params": draw(_member(params)),
        "result": draw(_member(json_values)) if draw(st.integers(0, 4)) == 0 else MISSING,
        "error": draw(_member(json_values)) if draw(st.integers(0, 4)) == 0 else MISSING,
    }
    return {k: v for k, v in members.items() if v is not MISSING}


@st.composite
def mutated(draw: st.DrawFn, original: bytes) -> bytes:
    """``original`` with a few random byte edits: flips, inserts, deletions, truncation, duplication."""
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "truncate", "duplicate", "replace"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if op == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete" and data:
            del data[at : at + draw(st.integers(1, 8))]
        elif op == "truncate":
            del data[at:]
        elif op == "duplicate":
            data[at:at] = data[at : at + draw(st.integers(1, 16))]
        elif op == "replace" and data:
            data[at] = draw(st.sampled_from(b'{}[]":,\\0123456789.-etrufalsn \t'))
    return bytes(data)
