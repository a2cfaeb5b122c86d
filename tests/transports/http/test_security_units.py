"""transports/http/security.py: the DNS-rebinding guard and content negotiation, without a server."""

from __future__ import annotations

import pytest

from elicitkit.transports.http.security import OriginGuard, accepts_event_stream, check_post_content

LOOPBACK = {"server": ("127.0.0.1", 8000)}
PUBLIC = {"server": ("0.0.0.0", 8000)}


def test_guard_is_on_by_default_only_on_loopback() -> None:
    guard = OriginGuard()
    assert guard.check(LOOPBACK, {"host": "evil.example"}) == (421, "host 'evil.example' is not allowed")
    assert guard.check(PUBLIC, {"host": "evil.example"}) is None


@pytest.mark.parametrize("host", ["localhost", "localhost:8000", "127.0.0.1:9", "[::1]:8000"])
def test_loopback_hosts_pass(host: str) -> None:
    assert OriginGuard().check(LOOPBACK, {"host": host}) is None


def test_origins_must_name_this_machine_or_be_allowed() -> None:
    guard = OriginGuard(allowed_origins={"https://app.example/"})
    ok = {"host": "localhost:8000"}
    assert guard.check(LOOPBACK, {**ok, "origin": "http://localhost:3000"}) is None
    assert guard.check(LOOPBACK, {**ok, "origin": "https://APP.example"}) is None
    refused = guard.check(LOOPBACK, {**ok, "origin": "https://evil.example"})
    assert refused is not None and refused[0] == 403


def test_allowed_hosts_and_forced_settings() -> None:
    assert OriginGuard(allowed_hosts={"My.Host:8000"}).check(LOOPBACK, {"host": "my.host:8000"}) is None
    assert OriginGuard(enabled=False).check(LOOPBACK, {"host": "evil.example"}) is None
    assert OriginGuard(enabled=True).check(PUBLIC, {"host": "evil.example"}) is not None


def test_post_content_negotiation() -> None:
    both = "application/json, text/event-stream"
    assert check_post_content({"accept": both, "content-type": "application/json"}) is None
    assert check_post_content({"accept": "*/*", "content-type": "application/json; charset=utf-8"}) is None
    assert check_post_content({"accept": "application/json", "content-type": "application/json"})[0] == 406  # type: ignore[index]
    assert check_post_content({"accept": both, "content-type": "text/plain"})[0] == 415  # type: ignore[index]


def test_get_must_accept_an_event_stream() -> None:
    assert accepts_event_stream({"accept": "text/event-stream"})
    assert accepts_event_stream({"accept": "*/*"})
    assert not accepts_event_stream({"accept": "application/json"})
