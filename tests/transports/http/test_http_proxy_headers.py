"""The runners apply uvicorn's proxy headers (``X-Forwarded-For``/``-Proto`` from trusted hosts)
before calling the app, not around it: the same rewrite, and no frame of ours per request."""

from __future__ import annotations

from typing import Any

import pytest

from elicitkit.transports.http.responses import Scope
from elicitkit.transports.http.serve import _config, _ProxyHeaders

pytestmark = pytest.mark.anyio


class Recorder:
    """An ASGI app that returns a marker coroutine, so the test sees it handed back untouched."""

    def __init__(self) -> None:
        self.scopes: list[Scope] = []

    async def run(self) -> str:
        return "ran"

    def __call__(self, scope: Scope, receive: Any, send: Any) -> Any:
        self.scopes.append(dict(scope))
        return self.run()


def _scope(client: str, *headers: tuple[bytes, bytes]) -> Scope:
    return {"type": "http", "client": (client, 5000), "scheme": "http", "headers": list(headers)}


FORWARDED = ((b"x-forwarded-for", b"203.0.113.7"), (b"x-forwarded-proto", b"https"))


async def test_a_trusted_proxy_sets_client_and_scheme_and_the_app_runs_bare() -> None:
    app = Recorder()
    proxy = _ProxyHeaders(app, "127.0.0.1")
    coro = proxy(_scope("127.0.0.1", *FORWARDED), None, None)
    assert coro.cr_code is Recorder.run.__code__  # type: ignore[attr-defined]  # the app's own coroutine
    assert await coro == "ran"
    assert app.scopes[0]["client"] == ("203.0.113.7", 0)
    assert app.scopes[0]["scheme"] == "https"


async def test_an_untrusted_peer_cannot_claim_another_address() -> None:
    app = Recorder()
    proxy = _ProxyHeaders(app, "127.0.0.1")
    await proxy(_scope("198.51.100.9", *FORWARDED), None, None)
    assert app.scopes[0]["client"] == ("198.51.100.9", 5000)
    assert app.scopes[0]["scheme"] == "http"


@pytest.mark.parametrize("field", FORWARDED, ids=lambda f: f[0].decode())
async def test_either_field_alone_is_applied(field: tuple[bytes, bytes]) -> None:
    app = Recorder()
    await _ProxyHeaders(app, "127.0.0.1")(_scope("127.0.0.1", (b"accept", b"*/*"), field), None, None)
    before = _scope("127.0.0.1")
    changed = {key: value for key, value in app.scopes[0].items() if key != "headers" and before[key] != value}
    assert changed == ({"client": ("203.0.113.7", 0)} if field[0] == b"x-forwarded-for" else {"scheme": "https"})


async def test_without_forwarded_fields_the_trusted_hosts_are_not_consulted() -> None:
    """No X-Forwarded-* field: nothing to rewrite, so the peer's address is not even parsed."""

    class Untouchable:
        def __contains__(self, host: object) -> bool:
            raise AssertionError("the trusted hosts were consulted")

    app = Recorder()
    proxy = _ProxyHeaders(app, "127.0.0.1")
    proxy.rewrite.trusted_hosts = Untouchable()  # type: ignore[assignment]
    scope = _scope("127.0.0.1", (b"host", b"127.0.0.1:9"), (b"x-forwarded-host", b"elsewhere"))
    coro = proxy(scope, None, None)
    assert coro.cr_code is Recorder.run.__code__  # type: ignore[attr-defined]
    assert await coro == "ran"
    assert app.scopes == [scope]


async def test_lifespan_passes_through() -> None:
    app = Recorder()
    await _ProxyHeaders(app, "127.0.0.1")({"type": "lifespan"}, None, None)
    assert app.scopes == [{"type": "lifespan"}]


def test_the_runners_use_uvicorns_trusted_hosts_and_no_middleware_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORWARDED_ALLOW_IPS", "10.0.0.1")
    app = Recorder()
    config = _config(
        app,
        "127.0.0.1",
        0,
        log_level="warning",
        access_log=False,
        header_timeout=None,
        body_timeout=None,
        shutdown_grace=1,
    )
    config.load()
    assert isinstance(config.loaded_app, _ProxyHeaders)  # uvicorn's own wrapper is off
    assert config.loaded_app.app is app
    config.loaded_app(_scope("10.0.0.1", (b"x-forwarded-for", b"192.0.2.1")), None, None).close()
    assert app.scopes[0]["client"] == ("192.0.2.1", 0)
