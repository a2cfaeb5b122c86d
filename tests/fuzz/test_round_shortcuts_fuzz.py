"""The 2026 round's shortcuts give exactly what the long way gives, for any input.

A question's fingerprint made with its schema's canonical JSON kept (``fingerprint_asked``)
must equal :func:`fingerprint_question` of the whole question, or a rolling upgrade (one
process seals, another opens) would refuse its own rounds; a round sealed from its values
(``seal_values``) must open to the payload :meth:`~AeadStateCodec.seal` would have made.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from elicitkit.server.rounds.keys import KeyRing
from elicitkit.server.rounds.sealing import (
    AeadStateCodec,
    StateBinding,
    construct_state,
    digest_arguments,
    fingerprint_asked,
    fingerprint_question,
    schema_json,
)

from ._budget import fuzz_settings

# Strings with what the careful path exists for: lone surrogates, NUL, non-ASCII, "null" itself.
text = st.one_of(st.text(), st.sampled_from(["\ud800", "null", "a\x00b", "é✓", ""]))
json_scalar = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True), text)
json_value = st.recursive(
    json_scalar,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(text, inner, max_size=4)),
    max_leaves=12,
)


def _long_way(method: str, params: dict[str, Any]) -> str | type[Exception]:
    try:
        return fingerprint_question({"method": method, "params": params})
    except (ValueError, TypeError) as exc:  # NaN and the like: refused the long way too
        return type(exc)


@given(method=text, message=text, schema=json_value, extra=st.dictionaries(text, json_value, max_size=3))
@fuzz_settings(300)
def test_fingerprint_with_kept_schema_json_is_the_fingerprint(
    method: str, message: str, schema: Any, extra: dict[str, Any]
) -> None:
    params = {**extra, "message": message, "requestedSchema": schema}
    expected = _long_way(method, params)
    try:
        got: str | type[Exception] = fingerprint_asked(method, params, schema_json(schema))
    except (ValueError, TypeError) as exc:
        got = type(exc)
    assert got == expected


@given(
    # (keys a payload can carry: a lone surrogate does not open on either path)
    questions=st.dictionaries(st.text(st.characters(exclude_categories=("Cs",))), st.text(max_size=30), max_size=4),
    app=st.one_of(st.none(), st.dictionaries(st.text(max_size=8), st.integers() | st.text(max_size=8), max_size=3)),
    round_no=st.integers(min_value=0, max_value=2**40),
    principal=st.one_of(st.none(), st.text(st.characters(exclude_categories=("Cs",)))),
)
@fuzz_settings(150)
def test_sealed_values_open_to_the_payload_seal_makes(
    questions: dict[str, str], app: Any, round_no: int, principal: str | None
) -> None:
    codec = AeadStateCodec(KeyRing.generate())
    binding = StateBinding.for_request("tools/call", {"name": "t", "arguments": {"a": 1}}, principal)
    answers = {key: {"action": "accept", "content": {"n": i}} for i, key in enumerate(questions) if i % 2 == 0}
    from_values = codec.open(codec.seal_values(round_no, questions, answers, app, binding), binding)
    from_model = codec.open(codec.seal(construct_state(round_no, questions, answers, app), binding), binding)
    assert from_values.model_dump(exclude={"nonce", "exp"}) == from_model.model_dump(exclude={"nonce", "exp"})
    assert from_values.binding == binding == StateBinding("tools/call", "t", digest_arguments({"a": 1}), principal)
