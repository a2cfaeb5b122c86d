"""The 2026 envelope a client puts in every request: made once per envelope, never shared between requests."""

from __future__ import annotations

from typing import Any

import pytest

from elicitkit import Client, Server
from elicitkit.protocol.modern import META_PROTOCOL_VERSION, wrap


def _client() -> Client:
    return Client(Server("wired"), mode="modern")


@pytest.mark.parametrize(
    "params",
    [None, {}, {"name": "book", "arguments": {"date": "d1"}}, {"name": "x", "_meta": {"progressToken": 7}}],
)
def test_wired_params_are_what_wrap_makes(params: dict[str, Any] | None) -> None:
    connection = _client().connection
    assert connection._wired(params) == wrap(params, connection.envelope())


def test_two_requests_do_not_share_their_meta_and_the_caller_keeps_its_params() -> None:
    connection = _client().connection
    params = {"name": "book"}
    first, second = connection._wired(params), connection._wired(params)
    assert params == {"name": "book"}
    assert first == second and first["_meta"] is not second["_meta"]
    first["_meta"]["extra"] = 1  # a later layer adding to one request's _meta
    assert "extra" not in connection._wired(params)["_meta"]


def test_a_new_envelope_is_taken_at_once() -> None:
    client = _client()
    connection = client.connection
    before = connection._wired({"name": "book"})
    connection.log_level = "debug"
    after = connection._wired({"name": "book"})
    assert after == wrap({"name": "book"}, connection.envelope())
    assert after["_meta"] != before["_meta"]
    assert after["_meta"][META_PROTOCOL_VERSION] == before["_meta"][META_PROTOCOL_VERSION]
