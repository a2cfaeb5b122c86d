"""LoopbackAuthorizer: the browser comes back to 127.0.0.1 with the code, and nothing else settles it."""

from __future__ import annotations

import io
import logging
import os
import stat
import sys
import webbrowser
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from elicitkit.auth import AuthorizationTimeout, LoopbackAuthorizer
from elicitkit.auth.loopback import can_open_browser
from elicitkit.errors import AuthError, ElicitkitError

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]

CODE = "SplxlOBeZQQYbYS6WxSbIA-secret-code"
AUTH_URL = "https://as.example/authorize?client_id=c&state=s1&code_challenge=x"


@pytest.fixture
def no_desktop(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("BROWSER", "DISPLAY", "WAYLAND_DISPLAY", "SSH_CONNECTION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    yield


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(trust_env=False, timeout=5) as client:
        yield client


async def authorize_with(
    authorizer: LoopbackAuthorizer, visit: list[str], http: httpx.AsyncClient
) -> tuple[dict[str, str], list[httpx.Response]]:
    """Run authorize() while a "browser" requests each path of ``visit`` on the listener, in order."""
    await authorizer.start()
    base = authorizer.redirect_uri.removesuffix("/callback")
    responses: list[httpx.Response] = []
    result: dict[str, str] = {}

    async def wait() -> None:
        result.update(await authorizer.authorize(AUTH_URL))

    async with anyio.create_task_group() as tg:
        tg.start_soon(wait)
        await anyio.sleep(0.05)
        for path in visit:
            responses.append(await http.get(base + path))
    return result, responses


async def test_redirect_uri_is_the_loopback_ip_after_start(no_desktop: None) -> None:
    authorizer = LoopbackAuthorizer(open_browser=False, print_to=io.StringIO())
    with pytest.raises(RuntimeError, match="after `await start"):
        _ = authorizer.redirect_uri
    async with authorizer:
        uri = authorizer.redirect_uri
        assert uri.startswith("http://127.0.0.1:") and uri.endswith("/callback")
        assert int(uri.split(":")[2].split("/")[0]) > 0
    with pytest.raises(ValueError, match=r"127\.0\.0\.1"):
        LoopbackAuthorizer(host="localhost")


async def test_returns_the_callback_params_and_ignores_other_requests(
    no_desktop: None, http: httpx.AsyncClient
) -> None:
    out = io.StringIO()
    authorizer = LoopbackAuthorizer(open_browser=False, print_to=out)
    try:
        params, responses = await authorize_with(
            authorizer,
            ["/favicon.ico", "/callback", f"/callback?code={CODE}&state=s1&iss=https%3A%2F%2Fas.example"],
            http,
        )
    finally:
        await authorizer.close()
    assert params == {"code": CODE, "state": "s1", "iss": "https://as.example"}
    favicon, empty, done = responses
    assert favicon.status_code == 404
    assert empty.status_code == 400  # no code, no error: not an authorization, the wait goes on
    assert done.status_code == 200
    assert "you can close this tab" in done.text
    assert done.headers["cache-control"] == "no-store"
    assert done.headers["referrer-policy"] == "no-referrer"
    assert CODE not in done.text
    printed = out.getvalue()
    assert AUTH_URL in printed and "open this address" in printed


async def test_an_error_redirect_is_returned_and_shown_escaped(no_desktop: None, http: httpx.AsyncClient) -> None:
    authorizer = LoopbackAuthorizer(open_browser=False, print_to=io.StringIO())
    try:
        params, (page,) = await authorize_with(
            authorizer, ["/callback?error=access_denied&error_description=%3Cb%3Eno%3C%2Fb%3E&state=s1"], http
        )
    finally:
        await authorizer.close()
    assert params == {"error": "access_denied", "error_description": "<b>no</b>", "state": "s1"}
    assert "&lt;b&gt;no&lt;/b&gt;" in page.text and "<b>no</b>" not in page.text


async def test_a_repeated_parameter_is_an_invalid_request(no_desktop: None, http: httpx.AsyncClient) -> None:
    authorizer = LoopbackAuthorizer(open_browser=False, print_to=io.StringIO())
    try:
        params, _ = await authorize_with(authorizer, [f"/callback?code={CODE}&state=a&state=b"], http)
    finally:
        await authorizer.close()
    assert params["error"] == "invalid_request"
    assert CODE not in params.values()


async def test_a_late_second_redirect_is_told_it_is_over(no_desktop: None, http: httpx.AsyncClient) -> None:
    authorizer = LoopbackAuthorizer(open_browser=False, print_to=io.StringIO())
    try:
        _, (first, second) = await authorize_with(
            authorizer, [f"/callback?code={CODE}&state=s", "/callback?code=other&state=s"], http
        )
    finally:
        await authorizer.close()
    assert first.status_code == 200
    assert second.status_code == 409 and "no longer waiting" in second.text


async def test_times_out_with_an_auth_error_that_says_what_to_do(no_desktop: None) -> None:
    async with LoopbackAuthorizer(open_browser=False, print_to=io.StringIO(), timeout=0.2) as authorizer:
        with pytest.raises(AuthorizationTimeout) as caught:
            await authorizer.authorize(AUTH_URL)
    assert isinstance(caught.value, AuthError) and isinstance(caught.value, ElicitkitError)
    assert isinstance(caught.value, TimeoutError)
    assert "run the command again" in str(caught.value)


async def test_the_code_reaches_no_log(
    no_desktop: None,
    http: httpx.AsyncClient,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.DEBUG)
    # A uvicorn that ran earlier in this process (another test's server) configured its loggers
    # not to propagate and to WARNING: hear the listener's logging here whatever ran before.
    monkeypatch.setattr(logging.getLogger("uvicorn"), "propagate", True)
    caplog.set_level(logging.DEBUG, logger="uvicorn.error")
    out = io.StringIO()
    authorizer = LoopbackAuthorizer(open_browser=False, print_to=out)
    try:
        await authorize_with(authorizer, [f"/callback?code={CODE}&state=s1"], http)
    finally:
        await authorizer.close()
    captured = capfd.readouterr()
    # the test's own HTTP client (the "browser") logs the URL it fetched; every other logger is ours
    ours = "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith(("httpx", "httpcore")))
    assert "Started server process" in caplog.text  # the listener's logging was captured
    for text in (ours, out.getvalue(), captured.out, captured.err):
        assert CODE not in text


async def test_a_fixed_port(no_desktop: None) -> None:
    async with LoopbackAuthorizer(open_browser=False, print_to=io.StringIO()) as first:
        port = int(first.redirect_uri.split(":")[2].split("/")[0])
    async with LoopbackAuthorizer(open_browser=False, print_to=io.StringIO(), port=port) as again:
        assert again.redirect_uri == f"http://127.0.0.1:{port}/callback"


# ------------------------------------------------------------------------------ opening the browser


def test_no_desktop_means_no_browser(no_desktop: None) -> None:
    assert can_open_browser() is False


def test_browser_env_means_a_browser(no_desktop: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BROWSER", "true")
    assert can_open_browser() is True


@pytest.fixture
def fake_browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$BROWSER set to a script that writes the URL it is given to a file."""
    seen = tmp_path / "opened.txt"
    script = tmp_path / "browser.sh"
    # written aside, then renamed: the test sees the whole URL or no file at all
    script.write_text(f'#!/bin/sh\nprintf "%s" "$1" > "{seen}.part" && mv "{seen}.part" "{seen}"\n', encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("BROWSER", str(script))
    monkeypatch.setattr(webbrowser, "_tryorder", None)  # webbrowser reads $BROWSER once per process
    monkeypatch.setattr(webbrowser, "_browsers", {})
    return seen


async def test_opens_the_browser_and_still_prints_the_address(
    no_desktop: None, fake_browser: Path, http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BROWSER", os.environ["BROWSER"])
    out = io.StringIO()
    authorizer = LoopbackAuthorizer(print_to=out)
    try:
        await authorizer.start()

        async def browser_visits() -> None:
            seen = anyio.Path(fake_browser)
            with anyio.fail_after(10):
                while not await seen.exists():  # noqa: ASYNC110 (a file another process writes)
                    await anyio.sleep(0.02)
            assert await seen.read_text() == AUTH_URL
            await http.get(f"{authorizer.redirect_uri}?code={CODE}&state=s1")

        async with anyio.create_task_group() as tg:
            tg.start_soon(browser_visits)
            params = await authorizer.authorize(AUTH_URL)
    finally:
        await authorizer.close()
    assert params["code"] == CODE
    assert "Opened your browser" in out.getvalue() and AUTH_URL in out.getvalue()


async def test_no_browser_flag_only_prints(no_desktop: None, fake_browser: Path, http: httpx.AsyncClient) -> None:
    out = io.StringIO()
    authorizer = LoopbackAuthorizer(open_browser=False, print_to=out)
    try:
        await authorize_with(authorizer, [f"/callback?code={CODE}&state=s1"], http)
    finally:
        await authorizer.close()
    assert not await anyio.Path(fake_browser).exists()
    assert "Opened" not in out.getvalue() and AUTH_URL in out.getvalue()


async def test_over_ssh_it_says_how_to_forward_the_port(
    no_desktop: None, http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSH_CONNECTION", "10.0.0.2 50000 10.0.0.1 22")
    out = io.StringIO()
    authorizer = LoopbackAuthorizer(print_to=out)  # wants a browser, but there is no desktop
    try:
        await authorize_with(authorizer, [f"/callback?code={CODE}&state=s1"], http)
        port = authorizer.redirect_uri.split(":")[2].split("/")[0]
    finally:
        await authorizer.close()
    assert f"ssh -L {port}:127.0.0.1:{port}" in out.getvalue()
