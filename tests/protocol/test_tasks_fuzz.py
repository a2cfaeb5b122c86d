"""Fuzzing the Tasks param parsers: any JSON a peer sends ends in a value or in -32602, never a crash."""

from __future__ import annotations

from typing import Any

import pytest

from elicitkit.protocol import tasks as t
from elicitkit.protocol.errors import INVALID_PARAMS, MCPError

hypothesis = pytest.importorskip("hypothesis")
st = pytest.importorskip("hypothesis.strategies")

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)
# Mostly well-formed shapes with random holes, so the fuzzer reaches the deeper checks too.
params = st.one_of(
    json_values,
    st.fixed_dictionaries({"taskId": json_values}),
    st.fixed_dictionaries({"taskId": st.text(max_size=300), "inputResponses": json_values}),
    st.fixed_dictionaries(
        {"taskId": st.text(min_size=1, max_size=40), "inputResponses": st.dictionaries(st.text(), json_values)}
    ),
)


def _parses_or_rejects(parse: Any, value: Any) -> Any:
    try:
        return parse(value)
    except MCPError as exc:
        assert exc.code == INVALID_PARAMS
        return None


@hypothesis.given(params)
@hypothesis.settings(max_examples=150, deadline=None)
def test_get_and_cancel_parsers(value: Any) -> None:
    for parse in (t.parse_get, t.parse_cancel):
        ref = _parses_or_rejects(parse, value)
        if ref is not None:
            assert isinstance(ref.task_id, str) and 0 < len(ref.task_id) <= t.MAX_TASK_ID_LENGTH
            assert ref.task_id == value["taskId"]


@hypothesis.given(params)
@hypothesis.settings(max_examples=150, deadline=None)
def test_update_parser(value: Any) -> None:
    update = _parses_or_rejects(t.parse_update, value)
    if update is not None:
        assert update.task_id == value["taskId"]
        assert all(isinstance(k, str) and isinstance(v, dict) for k, v in update.input_responses.items())


@hypothesis.given(st.floats(min_value=0, max_value=4_000_000_000, allow_nan=False))
@hypothesis.settings(max_examples=200, deadline=None)
def test_timestamps_round_trip_to_the_millisecond(ts: float) -> None:
    assert abs(t.parse_iso8601(t.iso8601(ts)) - ts) < 0.0011


@hypothesis.given(
    st.one_of(
        json_values,
        st.fixed_dictionaries({"notifications": json_values}),
        st.fixed_dictionaries(
            {"notifications": st.dictionaries(st.sampled_from(["toolsListChanged", "taskIds", "x"]), json_values)}
        ),
    )
)
@hypothesis.settings(max_examples=150, deadline=None)
def test_listen_filter_parser(value: Any) -> None:
    from elicitkit.protocol.subscriptions import parse_listen

    try:
        wanted = parse_listen(value)
    except MCPError as exc:
        assert exc.code == INVALID_PARAMS
        return
    assert len(set(wanted.task_ids)) == len(wanted.task_ids) and all(wanted.task_ids)
    assert parse_listen({"notifications": wanted.to_wire()}) == wanted
