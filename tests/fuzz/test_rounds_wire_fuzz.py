"""The fast paths of a 2026 round's wire checks against the slow ones they replaced.

``b64decode`` (a sealed ``requestState``'s data) reads only canonical unpadded base64url,
without a regular expression or a second encode: on any text it must give exactly what the
stdlib's decoder gives for a canonical base64url spelling, and None for every other text.
``tool_header_params`` skips the walk of an input schema in which no key is ``x-mcp-header``
(a byte search of its encoding): on any schema it must answer as the full walk does, the same
headers or the same refusal.
"""

from __future__ import annotations

import base64
import binascii
import string
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from elicitkit.protocol import modern
from elicitkit.protocol.modern import InvalidToolHeaders, tool_header_params
from elicitkit.server.rounds.keys import b64decode, b64encode

from ._budget import fuzz_settings

URL_ALPHABET = string.ascii_letters + string.digits + "-_"


def reference_b64decode(text: str) -> bytes | None:
    """The specification, spelled out: base64url characters only, no padding, and the one
    spelling the bytes have (no unused bits set), decoded by the stdlib."""
    if any(c not in URL_ALPHABET for c in text) or len(text) % 4 == 1:
        return None
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        return None
    canonical = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    return raw if canonical == text else None


def mutated(raw: bytes, index: int, char: str) -> str:
    text = b64encode(raw)
    if not text:
        return char
    index %= len(text)
    return text[:index] + char + text[index + 1 :]


ODD = st.sampled_from(list(URL_ALPHABET + "+/= \n\t.\x00é\U0001f600"))


@fuzz_settings(500)
@given(
    st.one_of(
        st.text(alphabet=URL_ALPHABET + "+/=", max_size=40),
        st.text(max_size=40),
        st.builds(mutated, st.binary(max_size=40), st.integers(min_value=0), ODD),
        st.builds(b64encode, st.binary(max_size=60)),
    )
)
def test_b64decode_reads_exactly_the_canonical_base64url(text: str) -> None:
    assert b64decode(text) == reference_b64decode(text)


def test_b64decode_refuses_what_the_fast_path_looks_at() -> None:
    raw = b"\xfb\xff\xbf"  # '+/' in standard base64, '-_' in base64url
    assert b64decode(b64encode(raw)) == raw
    assert b64decode(base64.b64encode(raw).decode()) is None  # standard alphabet
    assert b64decode(b64encode(b"ab") + "=") is None  # padded
    assert b64decode("QQ") == b"A" and b64decode("QR") is None  # unused bits set
    assert b64decode("QUI") == b"AB" and b64decode("QUJ") is None
    assert b64decode("Q") is None and b64decode("") == b""
    assert b64decode("QQ.") is None and b64decode("QQ\u00e9A") is None


# -- x-mcp-header --------------------------------------------------------------------------

KEYS = st.sampled_from(["type", "properties", "items", "x-mcp-header", "description", "a", "b", 'x-mcp-header":'])
LEAVES = st.one_of(
    st.sampled_from(["string", "integer", "boolean", "number", "x-mcp-header", "Region", "A B", ""]),
    st.integers(min_value=-3, max_value=3),
    st.booleans(),
    st.none(),
)
SCHEMAS = st.recursive(
    LEAVES,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=4)),
    max_leaves=12,
)
TOP = st.fixed_dictionaries(
    {"type": st.just("object"), "properties": st.dictionaries(st.sampled_from(["a", "b", "c"]), SCHEMAS, max_size=3)}
)


def walked(schema: Any) -> dict[str, str] | type[Exception]:
    """What the full walk answers (the byte search switched off)."""
    with mock.patch.object(modern, "_may_declare_headers", lambda _schema: True):
        try:
            return tool_header_params(schema)
        except InvalidToolHeaders:
            return InvalidToolHeaders


def searched(schema: Any) -> dict[str, str] | type[Exception]:
    try:
        return tool_header_params(schema)
    except InvalidToolHeaders:
        return InvalidToolHeaders


@fuzz_settings(400)
@given(st.one_of(TOP, SCHEMAS))
def test_tool_header_params_answers_as_the_full_walk(schema: Any) -> None:
    assert searched(schema) == walked(schema)


def test_tool_header_params_still_finds_and_refuses_headers() -> None:
    declared = {"type": "object", "properties": {"r": {"type": "string", "x-mcp-header": "Region"}}}
    assert tool_header_params(declared) == {"r": "Region"}
    nested = {"type": "object", "properties": {"o": {"type": "object", "items": {"x-mcp-header": "Deep"}}}}
    with pytest.raises(InvalidToolHeaders):
        tool_header_params(nested)
    # properties that are not an object declare nothing (this raised AttributeError before)
    assert tool_header_params({"type": "object", "properties": "string"}) == {}
    assert tool_header_params({"type": "object", "properties": ["x-mcp-header"]}) == {}
    # the words as a value, not a key: no header, nothing refused
    mentioned = {"type": "object", "properties": {"r": {"type": "string", "description": 'x-mcp-header":'}}}
    assert tool_header_params(mentioned) == {}
    # a schema orjson cannot encode (a non-string key) is walked, and still refused
    odd: dict[Any, Any] = {"type": "object", 1: {"x-mcp-header": "One"}, "properties": {}}
    with pytest.raises(InvalidToolHeaders):
        tool_header_params(odd)
