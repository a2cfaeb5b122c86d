"""The interop matrix through ``elicitkit gateway`` over Streamable HTTP: hosts of every era x
backends of every kind, each cell a form question, a URL question and a -32042.

Hosts: our Client on 2025-06-18, 2025-11-25 and 2026-07-28, and the official ``mcp`` client
(2025-11-25). Backends (stdio, one gateway for the module): our server spoken to on 2025-11-25
(``old.``) and on 2026-07-28 only (``new.``), the official SDK's server (``off.``), a FastMCP
4.0 server (``fast.``) and the TypeScript SDK v1's server (``ts.``); the TypeScript SDK v1's
client is a host too.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp
import pytest
from mcp import types as mcp_types

from elicitkit import Client
from elicitkit.client.rounds import InputRequiredResult
from elicitkit.elicitation.errors import UrlElicitationRequired
from kit.raw import wait_until

from .support import TS_HOST, Person, backends, gateway_process, typescript_sdk

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.interop,
    pytest.mark.timeout(60),
    pytest.mark.filterwarnings("ignore::mcp.MCPDeprecationWarning"),
]

STEP = 30.0
HOSTS = {"2025-06-18": {"protocol_version": "2025-06-18"}, "2025-11-25": {}, "2026-07-28": {"mode": "modern"}}


@pytest.fixture(scope="module")
def gateway_url(state: Path) -> Iterator[str]:
    env = {**os.environ, "GATEWAY_TEST_STATE": str(state)}
    with gateway_process({"name": "gw", "backends": backends()}, state, env) as url:  # official, FastMCP, TS too
        yield url


def host(url: str, era: str, person: Person, **options: Any) -> Client:
    return Client(url, elicitation_callback=person, timeout=STEP, **HOSTS[era], **options)


@pytest.mark.parametrize("era", list(HOSTS))
async def test_lists_every_backend_under_its_namespace(gateway_url: str, era: str) -> None:
    async with host(gateway_url, era, Person()) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert client.protocol_version == era
    assert {"old.book", "new.book", "off.seating", "off.connect_account", "off.gated_report", "fast.book"} <= names
    assert "book" not in names  # every tool under its backend's namespace


needs_ts = pytest.mark.skipif(typescript_sdk() is None, reason="node / the TypeScript SDK not installed (bootstrap)")
TS = pytest.param("ts", marks=needs_ts)


@pytest.mark.parametrize("backend", ["old", "new", "fast", TS])
@pytest.mark.parametrize("era", list(HOSTS))
async def test_a_form_question_reaches_every_host(gateway_url: str, era: str, backend: str) -> None:
    person = Person()
    async with host(gateway_url, era, person) as client:
        result = await client.call_tool(f"{backend}.book")
    assert (result.is_error, result.text) == (False, "booked 3 for Ada")
    assert person.forms() == ["Who is booking?"]


@pytest.mark.parametrize("era", list(HOSTS))
async def test_the_official_backends_form_reaches_every_host(gateway_url: str, era: str) -> None:
    person = Person()
    async with host(gateway_url, era, person) as client:
        result = await client.call_tool("off.seating")
    assert not result.is_error, result.text
    # its optional fields' defaults filled in on the way (by the host, or by the gateway's own client)
    assert '"name": "Ada"' in result.text and '"party_size": 2' in result.text
    assert person.forms() == ["How should we seat you?"]


@pytest.mark.parametrize(
    "backend",
    ["old.connect", "new.connect", "off.connect_account", "fast.connect", pytest.param("ts.connect", marks=needs_ts)],
)
@pytest.mark.parametrize("era", list(HOSTS))
async def test_a_url_question_reaches_every_host(gateway_url: str, era: str, backend: str) -> None:
    person = Person()
    arguments = {"account": "ada"} if backend.startswith("off.") else {}
    async with host(gateway_url, era, person) as client:
        result = await client.call_tool(backend, arguments)
    assert not result.is_error, result.text
    assert result.text.endswith(": accept")
    url = "https://auth.example.com/ada" if backend.startswith("off.") else "https://auth.example.com/sign-in"
    if era == "2025-06-18":  # no URL mode on that version: the link comes as a form to confirm
        assert person.urls() == [] and len(person.forms()) == 1 and url in person.forms()[0]
    else:
        assert person.urls() == [url]


@pytest.mark.parametrize("backend", ["old", "new"])
@pytest.mark.parametrize("era", list(HOSTS))
async def test_minus_32042_reaches_every_host(gateway_url: str, era: str, backend: str) -> None:
    person = Person()
    ticket = uuid.uuid4().hex[:8]
    url = "https://reports.example.com/authorize"
    async with host(gateway_url, era, person) as client:
        if era == "2025-11-25" and backend == "old":  # -32042 to a host that has it: as -32042
            with pytest.raises(UrlElicitationRequired) as raised:
                await client.call_tool(f"{backend}.gated", {"ticket": ticket})
            assert [r.url for r in raised.value.elicitations] == [url]
            assert raised.value.elicitations[0].elicitation_id == f"auth-{ticket}"
            second = await client.call_tool(f"{backend}.gated", {"ticket": ticket})
        elif era == "2025-06-18" and backend == "old":  # a host that cannot open URLs: the error result says so
            first = await client.call_tool(f"{backend}.gated", {"ticket": ticket})
            assert first.is_error and "cannot open URL elicitations" in first.text
            second = await client.call_tool(f"{backend}.gated", {"ticket": ticket})
        else:  # a URL question in the host's era (2026: a round; 2026 backend: an input request)
            second = await client.call_tool(f"{backend}.gated", {"ticket": ticket})
            assert url in (person.urls() or person.forms())[0]
    assert (second.is_error, second.text) == (False, f"report for {ticket}")


@pytest.mark.parametrize("tool", ["off.gated_report", pytest.param("ts.gated", marks=needs_ts)])
async def test_minus_32042_from_the_sdk_backends_becomes_a_2026_round(gateway_url: str, tool: str) -> None:
    async with host(gateway_url, "2026-07-28", Person()) as client:
        pending = await client.call_tool(tool, input_required="return")
    assert isinstance(pending, InputRequiredResult)
    [request] = pending.input_requests.values()
    assert request.method == "elicitation/create"
    assert request.params["mode"] == "url" and request.params["url"] == "https://reports.example.com/authorize"


@pytest.mark.parametrize("tool", ["off.gated_report", pytest.param("ts.gated", marks=needs_ts)])
async def test_minus_32042_from_the_sdk_backends_stays_minus_32042_on_2025_11_25(gateway_url: str, tool: str) -> None:
    async with host(gateway_url, "2025-11-25", Person()) as client:
        with pytest.raises(UrlElicitationRequired) as raised:
            await client.call_tool(tool)
    assert [(r.url, r.elicitation_id) for r in raised.value.elicitations] == [
        ("https://reports.example.com/authorize", "reports-auth")
    ]


@pytest.mark.parametrize("era", list(HOSTS))
async def test_fastmcp_reports_its_own_minus_32042_as_a_tool_error_and_that_passes(gateway_url: str, era: str) -> None:
    # FastMCP 4.0 turns UrlElicitationRequiredError into an isError result itself: nothing to translate
    async with host(gateway_url, era, Person()) as client:
        result = await client.call_tool("fast.gated")
    assert result.is_error and "Authorization required." in result.text


# -- the official client as the host ------------------------------------------------------------


class OfficialPerson:
    def __init__(self) -> None:
        self.asked: list[Any] = []

    async def __call__(self, context: Any, params: Any) -> mcp_types.ElicitResult:
        self.asked.append(params)
        if getattr(params, "mode", "form") == "url":
            return mcp_types.ElicitResult(action="accept")
        fields = params.requested_schema.get("properties", {})
        return mcp_types.ElicitResult(
            action="accept", content={"name": "Ada", **({"seats": 3} if "seats" in fields else {})}
        )


def text_of(result: mcp_types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, mcp_types.TextContent))


@pytest.mark.parametrize("backend", ["old", "new", "off", "fast"])
async def test_the_official_client_as_host(gateway_url: str, backend: str) -> None:
    person = OfficialPerson()
    form_tool, url_tool, gated_tool = {
        "old": ("old.book", "old.connect", "old.gated"),
        "new": ("new.book", "new.connect", "new.gated"),
        "off": ("off.seating", "off.connect_account", "off.gated_report"),
        "fast": ("fast.book", "fast.connect", "fast.gated"),
    }[backend]
    ticket = uuid.uuid4().hex[:8]
    with anyio.fail_after(STEP):
        async with mcp.Client(gateway_url, mode="legacy", cache=None, elicitation_callback=person) as session:
            form = await session.call_tool(form_tool, {})
            url = await session.call_tool(url_tool, {"account": "ada"} if backend == "off" else {})
            gated_args = {} if backend == "off" else {"ticket": ticket}
            try:
                gated: Any = await session.call_tool(gated_tool, gated_args)
            except Exception as exc:  # the SDK raises -32042 as an error of its own
                gated = exc
    assert not form.is_error and ("booked 3 for Ada" in text_of(form) or '"name": "Ada"' in text_of(form))
    assert not url.is_error and text_of(url).endswith(": accept")
    if backend == "fast":  # FastMCP reports its -32042 as a tool error itself
        assert isinstance(gated, mcp_types.CallToolResult) and gated.is_error
    elif backend == "new":  # a 2026 backend has no -32042: its URL input reached the host as a URL question
        assert not gated.is_error and text_of(gated) == f"report for {ticket}"
        assert [getattr(p, "url", None) for p in person.asked][-1] == "https://reports.example.com/authorize"
    else:
        assert not isinstance(gated, mcp_types.CallToolResult), "expected -32042"
        assert "-32042" in repr(gated) or "URL" in str(gated) or "Authoriz" in str(gated)


@pytest.mark.parametrize("era", ["2025-06-18"])
async def test_the_sdk_backends_minus_32042_to_a_host_without_url_mode(gateway_url: str, era: str) -> None:
    async with host(gateway_url, era, Person()) as client:
        result = await client.call_tool("off.gated_report")
    assert result.is_error and "cannot open URL elicitations" in result.text


# -- the TypeScript SDK's client as the host -------------------------------------------------------


@needs_ts
@pytest.mark.parametrize("backend", ["old", "new", "off", "fast", "ts"])
async def test_the_typescript_client_as_host(gateway_url: str, backend: str) -> None:
    sdk = typescript_sdk()
    assert sdk is not None
    ticket = f'{{"ticket": "{uuid.uuid4().hex[:8]}"}}'
    calls = {
        "old": ["old.book", "old.connect", f"old.gated:{ticket}"],
        "new": ["new.book", "new.connect", f"new.gated:{ticket}"],
        "off": ["off.seating", 'off.connect_account:{"account": "ada"}', "off.gated_report"],
        "fast": ["fast.book", "fast.connect", "fast.gated"],
        "ts": ["ts.book", "ts.connect", "ts.gated"],
    }[backend]
    tools = [call.split(":", 1)[0] for call in calls]
    done = await anyio.to_thread.run_sync(
        lambda: subprocess.run(
            [sdk[0], str(TS_HOST), gateway_url, *calls],
            env={**os.environ, "NODE_PATH": sdk[1]},
            capture_output=True,
            timeout=STEP,
            check=False,
        )
    )
    assert done.returncode == 0, done.stderr.decode()
    out = json.loads(done.stdout)
    assert out["protocolVersion"] == "2025-11-25"
    form, url, gated = (out["results"][tool] for tool in tools)
    assert not form["isError"] and ("booked 3 for Ada" in form["text"] or '"name": "Ada"' in form["text"])
    assert not url["isError"] and url["text"].endswith(": accept")
    asked_urls = [q.get("url") for q in out["asked"]]
    assert any(u is not None and u.startswith("https://auth.example.com/") for u in asked_urls)
    if backend == "fast":  # FastMCP's own isError for its -32042
        assert gated["isError"]
    elif backend == "new":  # a 2026 backend's URL input: a URL question, then the report
        assert gated["text"].startswith("report for ") and "https://reports.example.com/authorize" in asked_urls
    else:
        assert gated["code"] == -32042
        assert gated["data"]["elicitations"][0]["url"] == "https://reports.example.com/authorize"


# -- cancelling on the SDK hosts reaches every backend ------------------------------------------

WAITERS = ["old", "new", "off", "fast", TS]


@pytest.mark.parametrize("backend", WAITERS)
async def test_cancelling_on_the_official_client_reaches_the_backend(
    gateway_url: str, state: Path, backend: str
) -> None:
    mark = f"official-host-{backend}"
    async with mcp.Client(gateway_url, mode="legacy", cache=None, elicitation_callback=OfficialPerson()) as session:
        with anyio.move_on_after(0.5) as gave_up:  # the SDK sends notifications/cancelled
            await session.call_tool(f"{backend}.wait", {"mark": mark})
        assert gave_up.cancelled_caught
        await wait_until((state / f"cancelled-{mark}").exists, 10, f"{backend}'s tool to be cancelled")


@needs_ts
@pytest.mark.parametrize("backend", WAITERS)
async def test_cancelling_on_the_typescript_client_reaches_the_backend(
    gateway_url: str, state: Path, backend: str
) -> None:
    sdk = typescript_sdk()
    assert sdk is not None
    mark = f"ts-host-{backend}"
    done = await anyio.to_thread.run_sync(
        lambda: subprocess.run(
            [sdk[0], str(TS_HOST), gateway_url, f'!{backend}.wait:{{"mark": "{mark}"}}'],
            env={**os.environ, "NODE_PATH": sdk[1]},
            capture_output=True,
            timeout=STEP,
            check=False,
        )
    )
    assert done.returncode == 0, done.stderr.decode()
    assert "message" in json.loads(done.stdout)["results"][f"{backend}.wait"]  # it gave up: an error
    await wait_until((state / f"cancelled-{mark}").exists, 10, f"{backend}'s tool to be cancelled")
