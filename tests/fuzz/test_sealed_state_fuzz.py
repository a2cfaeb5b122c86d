"""Sealed ``requestState`` under tampering: flipped, cut, extended or spliced, it is always refused.

Two levels: the codec (every mutation of a sealed token opens to :class:`InvalidRequestState`
with the one public message, never a payload, never another exception), and a real 2026
server session (a tampered state sent back with its answer gets -32602 with that message and
the tool never runs on it; the untampered state still completes the round).
"""

from __future__ import annotations

import base64
import binascii
import string
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import orjson
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from elicitkit import Context, Server

try:  # the redesign moves this module (issue 11); the fuzzer follows it
    from elicitkit.server.rounds.sealing import (  # type: ignore[import-not-found]
        PUBLIC_MESSAGE,
        AeadStateCodec,
        InvalidRequestState,
        KeyRing,
        SealedState,
        StateBinding,
        fingerprint_question,
    )
except ImportError:
    from elicitkit.server.request_state import (
        PUBLIC_MESSAGE,
        AeadStateCodec,
        InvalidRequestState,
        KeyRing,
        SealedState,
        StateBinding,
        fingerprint_question,
    )

from elicitkit.server.rounds.keys import b64decode

from ._budget import fuzz_settings

BINDING = StateBinding.for_request("tools/call", {"name": "book", "arguments": {"date": "2025-12-25"}}, "alice")
CODEC = AeadStateCodec(KeyRing.generate())
QUESTION = {"method": "elicitation/create", "params": {"message": "Another date?"}}
TOKEN = CODEC.seal(
    SealedState(round=1, questions={"q1": fingerprint_question(QUESTION)}, answers={"q1": {"action": "accept"}}),
    BINDING,
)
ALPHABET = string.ascii_letters + string.digits + "-_."


@st.composite
def tampered(draw: st.DrawFn, token: str) -> str:
    """``token`` with one to three edits, in its own alphabet or outside it."""
    chars = list(token)
    for _ in range(draw(st.integers(1, 3))):
        at = draw(st.integers(0, len(chars) - 1))
        op = draw(st.sampled_from(["replace", "insert", "delete", "truncate", "extend", "swap", "other"]))
        if op == "replace":
            chars[at] = draw(st.sampled_from(ALPHABET))
        elif op == "insert":
            chars.insert(at, draw(st.sampled_from(ALPHABET)))
        elif op == "delete" and len(chars) > 1:
            del chars[at]
        elif op == "truncate":
            del chars[max(at, 1) :]
        elif op == "extend":
            chars.extend(draw(st.text(ALPHABET, min_size=1, max_size=8)))
        elif op == "swap":
            other = draw(st.integers(0, len(chars) - 1))
            chars[at], chars[other] = chars[other], chars[at]
        else:
            chars[at] = draw(st.characters())
    return "".join(chars)


def must_refuse(codec: AeadStateCodec, token: Any, binding: StateBinding) -> None:
    try:
        opened = codec.open(token, binding)
    except InvalidRequestState as exc:
        assert str(exc) == PUBLIC_MESSAGE
        assert exc.to_mcp_error().message == PUBLIC_MESSAGE and exc.to_mcp_error().data is None
        event(exc.reason.split("'")[0].split(" (")[0].strip()[:40])
        return
    raise AssertionError(f"a tampered state was accepted: {token!r} -> {opened!r}")


@fuzz_settings(500)
@given(tampered(TOKEN))
def test_every_tampered_token_is_refused_with_the_one_public_error(token: str) -> None:
    if token == TOKEN:
        event("no-op edit")
        return
    must_refuse(CODEC, token, BINDING)


@fuzz_settings(200)
@given(st.one_of(st.text(max_size=300), st.binary(max_size=100).map(lambda b: "v1." + b.hex()), st.integers()))
def test_random_tokens_are_refused(token: Any) -> None:
    must_refuse(CODEC, token, BINDING)


@fuzz_settings(100)
@given(
    st.sampled_from(
        [
            StateBinding.for_request("tools/call", {"name": "book", "arguments": {"date": "2025-12-26"}}, "alice"),
            StateBinding.for_request("tools/call", {"name": "other", "arguments": {"date": "2025-12-25"}}, "alice"),
            StateBinding.for_request("tools/call", {"name": "book", "arguments": {"date": "2025-12-25"}}, "bob"),
            StateBinding.for_request("tools/call", {"name": "book", "arguments": {"date": "2025-12-25"}}, None),
            StateBinding.for_request("prompts/get", {"name": "book", "arguments": {"date": "2025-12-25"}}, "alice"),
        ]
    )
)
def test_a_genuine_token_is_refused_under_any_other_binding(binding: StateBinding) -> None:
    must_refuse(CODEC, TOKEN, binding)


# ----------------------------------------------------------------------------- through a 2026 server session

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "fuzz", "version": "0"},
}


def asking_server() -> tuple[Server, list[str]]:
    server = Server("sealed-fuzz")
    ran: list[str] = []

    @server.tool()
    async def ask(ctx: Context) -> str:
        result = await ctx.elicit("Name?", str)
        ran.append(str(result.action))
        return "done"

    return server, ran


@asynccontextmanager
async def session(server: Server) -> AsyncIterator[Any]:
    answers: dict[Any, Any] = {}
    arrived = [anyio.Event()]

    async def deliver(message: dict[str, Any], related: Any) -> None:
        answers[message.get("id")] = message
        arrived[0].set()

    live = server.create_session(deliver)

    async def call(request_id: int, params: dict[str, Any]) -> dict[str, Any]:
        frame = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {**params, "_meta": META}}
        await live.peer.feed(orjson.dumps(frame))
        with anyio.fail_after(5):
            while request_id not in answers:
                arrived[0] = anyio.Event()
                await arrived[0].wait()
        return answers.pop(request_id)  # type: ignore[no-any-return]

    async with live.peer:
        yield call


@pytest.mark.anyio
async def test_tampered_states_sent_to_a_server_are_refused() -> None:
    """One real round, then every tampered state from the strategy, each answered with -32602."""
    server, ran = asking_server()
    reply = {"q1": {"action": "accept", "content": {"value": "Ada"}}}
    async with session(server) as call:
        first = await call(1, {"name": "ask", "arguments": {}})
        token = first["result"]["requestState"]
        seen: set[str] = set()

        @fuzz_settings(150)
        @given(tampered(token))
        def collect(candidate: str) -> None:
            seen.add(candidate)

        collect()
        seen.discard(token)
        for number, candidate in enumerate(sorted(seen), start=2):
            answer = await call(
                number, {"name": "ask", "arguments": {}, "requestState": candidate, "inputResponses": reply}
            )
            assert answer["error"] == {"code": -32602, "message": PUBLIC_MESSAGE}, (candidate, answer)
        assert ran == []  # the tool never ran on a tampered state
        done = await call(10_000, {"name": "ask", "arguments": {}, "requestState": token, "inputResponses": reply})
    assert done["result"]["content"][0]["text"] == "done"
    assert ran == ["accept"]
    assert len(seen) > 50


# -- base64url of the token: strict, canonical, whatever the text ---------------------------

_B64URL = string.ascii_letters + string.digits + "-_"


def _reference_b64decode(text: str) -> bytes | None:
    """What a strict unpadded base64url decoder accepts, from the stdlib's validating decoder:
    only the 64 characters, no padding, a length the alphabet can make, and an encoding that
    the bytes give back exactly (the canonical one: no unused bit set)."""
    if any(c not in _B64URL for c in text) or len(text) % 4 == 1:
        return None
    try:
        raw = base64.b64decode(text.translate(str.maketrans("-_", "+/")) + "=" * (-len(text) % 4), validate=True)
    except binascii.Error:
        return None
    return raw if base64.urlsafe_b64encode(raw).rstrip(b"=").decode() == text else None


@fuzz_settings(600)
@given(
    st.one_of(
        st.text(alphabet=_B64URL, max_size=24),
        st.text(alphabet=_B64URL + "+/=. \n\t\x00é*", max_size=24),
        st.text(max_size=12),
        st.binary(max_size=18).map(lambda raw: base64.urlsafe_b64encode(raw).decode().rstrip("=")),
    )
)
def test_token_base64url_is_strict_and_canonical(text: str) -> None:
    expected = _reference_b64decode(text)
    event("decodes" if expected is not None else "refused")
    assert b64decode(text) == expected
