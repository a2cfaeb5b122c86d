"""The connect pages' parsers on hostile input: start links, callback states, sealed flows.

Invariants: a start link this server did not make opens to None (never raises, never half
opens), whatever the bytes; a real link changed anywhere does not open; a state splits into a
flow id and a secret or into None; a flow record that is not ours reads as None.
"""

from __future__ import annotations

import json
import time

from hypothesis import given
from hypothesis import strategies as st

from elicitkit.server.auth.connections import Connections, MemoryConnectionStore, Provider
from elicitkit.server.auth.connections.flows import Flow, flow_from_json, flow_to_json, split_state
from elicitkit.server.rounds.keys import KeyRing

from ._budget import fuzz_settings
from ._strategies import json_values

GH = Provider("gh", client_id="app", authorization_endpoint="https://gh/a", token_endpoint="https://gh/t")
CONNECTIONS = Connections([GH], store=MemoryConnectionStore(), keys=KeyRing.generate())
REAL = CONNECTIONS.link_token("flow-1", "ada", "gh", time.time() + 60)
B64 = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=", max_size=400)


@fuzz_settings(300)
@given(st.one_of(st.text(max_size=600), B64))
def test_a_link_not_made_here_opens_to_none(token: str) -> None:
    assert CONNECTIONS.open_link(token) is None


@fuzz_settings(300)
@given(
    st.integers(min_value=0, max_value=len(REAL) - 1), st.sampled_from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123456789-_")
)
def test_a_real_link_changed_anywhere_does_not_open(index: int, char: str) -> None:
    changed = REAL[:index] + char + REAL[index + 1 :]
    opened = CONNECTIONS.open_link(changed)
    # base64 has slack bits in its last character: the same bytes may decode from two spellings
    assert opened is None or (changed[:-1] == REAL[:-1] and opened == CONNECTIONS.open_link(REAL))


@fuzz_settings(300)
@given(st.text(max_size=300))
def test_a_state_splits_or_is_refused(state: str) -> None:
    parts = split_state(state)
    if parts is not None:
        assert parts[0] and parts[1] and f"{parts[0]}.{parts[1]}" == state


FLOW = flow_to_json(Flow("f", "ada", "gh", "https://x/start?link=y", 1.0))


@fuzz_settings(300)
@given(
    st.one_of(
        st.binary(max_size=300),
        st.dictionaries(st.sampled_from(list(json.loads(FLOW))), json_values, max_size=18).map(
            lambda d: json.dumps({**json.loads(FLOW), **d}).encode()
        ),
    )
)
def test_a_flow_record_that_is_not_one_reads_as_none(raw: bytes) -> None:
    flow = flow_from_json(raw)
    if flow is not None:
        assert flow_from_json(flow_to_json(flow)) == flow
        assert all(isinstance(getattr(flow, k), str) for k in ("flow_id", "principal", "provider", "status"))
