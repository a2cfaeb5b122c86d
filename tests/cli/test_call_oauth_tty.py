"""``elicitkit call`` on a terminal against an OAuth-protected server: the whole person's path.

Real parts only: oidc-provider (npm) as the authorization server, the protected elicitkit server
(tests/auth/protected_server.py) checking its JWTs, the ``elicitkit`` command on a
pseudo-terminal, and headless Chromium as the person's browser. ``$BROWSER`` is a script that
hands the address the command opens to the test; the tokens go to a 0600 file in a scratch
``$XDG_STATE_HOME``.

1. The first call meets a 401, opens the browser, the person signs in and consents, and the
   tool's question is answered on the terminal.
2. The second call uses the kept token: no browser.
3. Once the access token nears its end, the next call refreshes it (rotated), still no browser.

``auth login --no-browser`` prints the address instead; ``auth status --json`` and ``auth
logout`` follow. Nothing secret may appear on the terminal.
"""

from __future__ import annotations

import io
import json
import os
import re
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pexpect
import pytest

from kit.oidc import AuthorizationServer, authorization_server
from kit.oidc.consent import chromium, sign_in_and_consent
from kit.processes import serve_on_free_port

pytestmark = pytest.mark.timeout(240)

ELICITKIT = Path(sys.executable).with_name("elicitkit")
PROTECTED = Path(__file__).resolve().parents[1] / "auth" / "protected_server.py"
ENTER = "\r"
ACCESS_TTL = 300  # seconds: the first sign-in never comes near the client's renewal (60 s before expiry)
REFRESH_LEEWAY = 60


@pytest.fixture(scope="module")
def provider() -> Iterator[AuthorizationServer]:
    with authorization_server(access_ttl=ACCESS_TTL) as server:
        yield server


@pytest.fixture(scope="module")
def protected(provider: AuthorizationServer) -> Iterator[str]:
    argv = lambda port: [sys.executable, str(PROTECTED), str(port), provider.issuer]  # noqa: E731
    with serve_on_free_port(argv, "protected_server.py") as (port, _proc, _log):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with chromium() as driver:
        yield driver


@dataclass
class Person:
    """A scratch home for the command: where it keeps tokens, and what its $BROWSER was handed."""

    root: Path

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def opened(self) -> Path:
        return self.root / "opened.txt"

    @property
    def token_file(self) -> Path:
        return self.state / "elicitkit" / "tokens.json"

    def env(self) -> dict[str, str]:
        script = self.root / "browser.sh"
        opened = self.opened  # written aside, then renamed: the test sees the whole URL or no file at all
        script.write_text(f'#!/bin/sh\nprintf "%s" "$1" > "{opened}.part" && mv "{opened}.part" "{opened}"\n')
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
        env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "NO_COLOR")}
        env.update(
            BROWSER=str(script),
            XDG_STATE_HOME=str(self.state),
            ELICITKIT_TOKEN_STORE="file",
            TERM="xterm-256color",
            PROMPT_TOOLKIT_NO_CPR="1",
            PYTHONUNBUFFERED="1",
        )
        return env

    def tokens(self) -> dict[str, Any]:
        entries = json.loads(self.token_file.read_text())
        (record,) = [value for key, value in entries.items() if key.startswith("tokens ")]
        assert isinstance(record, dict)
        return record

    def age_tokens(self, *, until: float) -> None:
        """Make the kept token set end at ``until``, as if time had passed (the file keeps its mode)."""
        entries = json.loads(self.token_file.read_text())
        for key, value in entries.items():
            if key.startswith("tokens "):
                value["expires_at"] = until
        self.token_file.write_text(json.dumps(entries))

    def spawn(self, *args: str) -> pexpect.spawn:
        """The command on a pseudo-terminal; everything it shows is kept in ``child.logfile_read``."""
        child = pexpect.spawn(
            str(ELICITKIT), list(args), env=self.env(), encoding="utf-8", dimensions=(50, 200), timeout=60
        )
        child.logfile_read = io.StringIO()
        return child


def wait_for_file(path: Path, child: pexpect.spawn, timeout: float = 30.0) -> str:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"the command opened no browser; it printed:\n{child.before}")
        try:  # keep reading the terminal meanwhile (and notice an early exit)
            child.expect(pexpect.TIMEOUT, timeout=0.1)
        except pexpect.EOF:
            raise AssertionError(f"the command ended before opening a browser:\n{child.before}") from None
    return path.read_text()


def answer_greeting(child: pexpect.spawn) -> None:
    child.expect("Who is calling")
    child.expect("Name.*\u203a")
    child.send("Ada" + ENTER)  # a form of one answer: typing it sends it (no review step)
    child.expect("Sent to")
    child.expect("Hello, Ada!")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before


def test_call_signs_in_once_then_reuses_then_refreshes(
    provider: AuthorizationServer, protected: str, browser: Any, tmp_path: Path
) -> None:
    person = Person(tmp_path)
    transcript: list[str] = []

    # 1. a 401, the browser, the person's consent, then the question on the terminal
    child = person.spawn("call", protected, "greet", "--plain")
    try:
        url = wait_for_file(person.opened, child)
        query = parse_qs(urlsplit(url).query)
        assert url.startswith(provider.issuer + "/auth?")
        assert query["resource"] == [protected] and query["code_challenge_method"] == ["S256"]
        redirect = query["redirect_uri"][0]
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/callback", redirect)
        assert sign_in_and_consent(browser, url, redirect_prefix=redirect) == "Signed in"
        code = parse_qs(urlsplit(browser.current_url).query)["code"][0]
        answer_greeting(child)
    finally:
        child.close(force=True)
        transcript.append(child.logfile_read.getvalue())
    first_text = transcript[-1]
    kept = person.tokens()
    assert stat.S_IMODE(person.token_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(person.token_file.parent.stat().st_mode) == 0o700
    assert kept["issuer"] == provider.issuer and kept["resource"] == protected and kept["refresh_token"]
    assert time.time() < kept["expires_at"] - REFRESH_LEEWAY, "the first sign-in took longer than the token's life"

    # 2. the kept token: no browser, no sign-in
    person.opened.unlink()
    child = person.spawn("call", protected, "greet", "--plain")
    try:
        answer_greeting(child)
    finally:
        child.close(force=True)
        transcript.append(child.logfile_read.getvalue())
    assert not person.opened.exists()
    assert "sign in" not in transcript[-1].lower()
    assert person.tokens() == kept

    # 3. the token nears its end: refreshed silently (rotated), no browser. Rather than wait out
    # most of its life, the kept record says it ends sooner (the client reads expires_at from it)
    person.age_tokens(until=time.time() + REFRESH_LEEWAY - 5)
    child = person.spawn("call", protected, "whoami")
    try:
        child.expect("a protected server")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0, child.before
    finally:
        child.close(force=True)
        transcript.append(child.logfile_read.getvalue())
    assert not person.opened.exists()
    renewed = person.tokens()
    assert renewed["access_token"] != kept["access_token"]
    assert renewed["refresh_token"] != kept["refresh_token"]
    assert renewed["expires_at"] > kept["expires_at"]

    assert "Opened your browser" in first_text
    everything = "\n".join(transcript)
    for secret in (code, kept["access_token"], kept["refresh_token"], renewed["access_token"]):
        assert secret not in everything


def test_auth_login_without_a_browser_then_status_and_logout(
    provider: AuthorizationServer, protected: str, browser: Any, tmp_path: Path
) -> None:
    person = Person(tmp_path)
    child = person.spawn("auth", "login", protected, "--no-browser")
    try:
        child.expect(r"open this address in a browser[^\n]*\n\s*\n\s*(http://127\.0\.0\.1:\d+/auth\?\S+)")
        url = child.match.group(1)
        redirect = parse_qs(urlsplit(url).query)["redirect_uri"][0]
        assert sign_in_and_consent(browser, url, redirect_prefix=redirect) == "Signed in"
        child.expect("Signed in\\.")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0, child.before
    finally:
        child.close(force=True)
    assert not person.opened.exists()  # --no-browser: $BROWSER was never run
    kept = person.tokens()

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        env = person.env()
        return subprocess.run([str(ELICITKIT), *args], env=env, capture_output=True, text=True, timeout=60)

    status = cli("auth", "status", protected, "--json")
    assert status.returncode == 0, status.stderr
    (entry,) = json.loads(status.stdout)["signed_in"]
    assert entry["server"] == protected and entry["issuer"] == provider.issuer
    assert "mcp:tools" in entry["scopes"] and entry["renews_itself"] is True and entry["expired"] is False
    for secret in (kept["access_token"], kept["refresh_token"]):
        assert secret not in status.stdout + status.stderr
    plain = cli("auth", "status", protected)
    assert plain.returncode == 0 and f"issuer:   {provider.issuer}" in plain.stdout
    assert kept["access_token"] not in plain.stdout

    logout = cli("auth", "logout", protected)
    assert logout.returncode == 0 and "forgot 1 token set(s)" in logout.stdout
    after = cli("auth", "status", protected)
    assert after.returncode == 1 and "Not signed in" in after.stdout
