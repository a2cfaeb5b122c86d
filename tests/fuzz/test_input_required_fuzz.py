"""A hostile 2026 server's ``input_required`` results, read by the client.

``InputRequiredResult.from_wire`` reads every field of such a result by hand (no pydantic
validation: the client's hot path) and the retry loop (:func:`drive`) acts on it. Whatever a
server sends, the client must either read exactly what a plain reading of the spec gives
(:func:`reference`) or refuse with :class:`InputRequestViolation`, never fail with anything
else, and a round it read must survive ``to_json``/``from_json`` (a pending round stored and
resumed elsewhere). Through :func:`drive`, any result sequence ends in a result, a pending
round, or a :class:`MultiRoundTripError`.
"""

from __future__ import annotations

from typing import Any

import anyio
from hypothesis import example, given
from hypothesis import strategies as st

from elicitkit.client.rounds import (
    InputRequestViolation,
    InputRequiredResult,
    MultiRoundTripError,
    drive,
)
from elicitkit.protocol.modern import RESERVED_PARAMS

from ._budget import fuzz_settings
from ._strategies import MISSING, json_values

INPUT_METHODS = ["elicitation/create", "sampling/createMessage", "roots/list"]

entries = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {},
        optional={
            "method": st.one_of(st.sampled_from(INPUT_METHODS), json_values),
            "params": st.one_of(st.dictionaries(st.text(max_size=8), json_values, max_size=3), json_values),
            "extra": json_values,
        },
    ),
)
results = st.fixed_dictionaries(
    {"resultType": st.just("input_required")},
    optional={
        "inputRequests": st.one_of(st.dictionaries(st.text(max_size=8), entries, max_size=3), json_values),
        "requestState": st.one_of(st.text(max_size=30), json_values),
        "_meta": json_values,
    },
)
original = st.dictionaries(
    st.one_of(st.sampled_from([*sorted(RESERVED_PARAMS), "name", "arguments"]), st.text(max_size=8)),
    json_values,
    max_size=5,
)


def reference(method: str, params: dict[str, Any], result: dict[str, Any]) -> dict[str, Any] | None:
    """What a plain reading of the spec takes from ``result``; None where it must be refused."""
    raw = result.get("inputRequests", MISSING)
    state = result.get("requestState")
    if raw is not MISSING and raw is not None and not isinstance(raw, dict):
        return None
    requests = {}
    for key, entry in (raw if isinstance(raw, dict) else {}).items():
        if not isinstance(entry, dict) or not isinstance(entry.get("method"), str):
            return None
        entry_params = entry.get("params", {})
        if not isinstance(entry_params, dict):
            return None
        requests[key] = {"method": entry["method"], "params": entry_params}
    if state is not None and not isinstance(state, str):
        return None
    if (raw is MISSING or raw is None) and state is None:
        return None
    meta = result.get("_meta")
    return {
        "method": method,
        "params": {k: v for k, v in params.items() if k not in RESERVED_PARAMS},
        "input_requests": requests,
        "request_state": state,
        "meta": meta if isinstance(meta, dict) else None,
    }


@fuzz_settings(400)
@given(original, results)
@example({}, {"resultType": "input_required"})  # neither requests nor state
@example({}, {"resultType": "input_required", "inputRequests": []})
@example({}, {"resultType": "input_required", "inputRequests": {"a": {"method": 1}}})
@example({}, {"resultType": "input_required", "inputRequests": {"a": {"method": "roots/list", "params": []}}})
@example({}, {"resultType": "input_required", "requestState": 5})
@example({"requestState": "old", "_meta": {}}, {"resultType": "input_required", "requestState": "new"})
def test_from_wire_reads_exactly_the_spec_or_refuses(params: dict[str, Any], result: dict[str, Any]) -> None:
    expected = reference("tools/call", params, result)
    try:
        pending = InputRequiredResult.from_wire("tools/call", params, result)
    except InputRequestViolation as exc:
        assert expected is None, f"refused a readable round: {exc}"
        return
    assert expected is not None, "accepted a round the spec refuses"
    got = pending.model_dump()
    assert got == expected
    assert pending.params is not params  # the caller's params are never the round's own
    assert InputRequiredResult.from_json(pending.to_json()) == pending


def _scripted(rounds: list[dict[str, Any]]) -> Any:
    replies = iter(rounds)

    async def send(method: str, params: dict[str, Any]) -> dict[str, Any]:
        try:
            return next(replies)
        except StopIteration:
            return {"content": []}

    return send


async def _answer(pending: InputRequiredResult) -> dict[str, Any]:
    return {key: {"action": "decline"} for key in pending.input_requests}


@fuzz_settings(200)
@given(st.lists(st.one_of(results, st.dictionaries(st.text(max_size=10), json_values, max_size=3)), max_size=4))
def test_drive_ends_in_a_result_or_a_round_error(rounds: list[dict[str, Any]]) -> None:
    async def main() -> None:
        first, rest = (rounds[0], rounds[1:]) if rounds else ({"content": []}, [])
        try:
            outcome = await drive(
                _scripted(rest), _answer, "tools/call", {"name": "t"}, first=first, max_rounds=3, backoff=0.0
            )
        except MultiRoundTripError:
            return
        assert isinstance(outcome, dict)
        assert outcome.get("resultType", "complete") == "complete"

    anyio.run(main)
