"""The gateway in one process (hosts in memory, backends over stdio and HTTP): everything that
is not a question passes, and so do cancellation, progress, sampling, roots and logs."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from elicitkit import Client, MCPError
from elicitkit.gateway import Gateway, parse_config
from kit.processes import serve_on_free_port
from kit.raw import wait_until

from .support import BACKEND, Person, backends, typescript_sdk

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

HOSTS = {"2025-06-18": {"protocol_version": "2025-06-18"}, "2025-11-25": {}, "2026-07-28": {"mode": "modern"}}


@pytest.fixture(scope="module")
def http_backend(state: Path) -> Iterator[tuple[str, Any]]:
    """Our backend over Streamable HTTP (its process, to stop it)."""
    argv = lambda port: [sys.executable, str(BACKEND), "http", str(port)]  # noqa: E731
    with serve_on_free_port(argv, "backend", env={**os.environ, "GATEWAY_TEST_STATE": str(state)}) as served:
        yield f"http://127.0.0.1:{served[0]}/mcp", served[1]


@pytest.fixture(scope="module")
async def gateway(state: Path, http_backend: tuple[str, Any]) -> AsyncIterator[Gateway]:
    config = parse_config(
        {
            "name": "gw",
            "backends": [*backends(official=False), {"name": "web", "url": http_backend[0], "namespace": "web."}],
        }
    )
    async with Gateway(config).running() as running:
        yield running


async def roots() -> list[dict[str, Any]]:
    return [{"uri": "file:///work", "name": "work"}]


async def sample(params: dict[str, Any]) -> dict[str, Any]:
    prompt = params["messages"][0]["content"]["text"]
    return {"role": "assistant", "content": {"type": "text", "text": f"short: {prompt[-5:]}"}, "model": "m"}


def host(gateway: Gateway, era: str, **options: Any) -> Client:
    return Client(gateway, elicitation_callback=Person(), **HOSTS[era], **options)


@pytest.mark.parametrize("era", list(HOSTS))
async def test_resources_templates_prompts_and_completion_pass(gateway: Gateway, era: str) -> None:
    async with host(gateway, era) as client:
        resources = {r.uri: r.name for r in (await client.list_resources()).resources}
        templates = [t.uri_template for t in (await client.list_resource_templates()).resource_templates]
        read = await client.read_resource("note://hello")
        item = await client.read_resource("note://items/7")
        prompts = [p.name for p in (await client.list_prompts()).prompts]
        prompt = await client.get_prompt("new.greet", {"name": "Ada"})
        completed = await client.complete({"type": "ref/prompt", "name": "old.greet"}, {"name": "name", "value": "a"})
    assert resources["note://hello"] == "old.hello"  # the first backend that has the URI
    assert templates.count("note://items/{item}") == 3
    assert read.contents[0].text == "hello from the backend"
    assert item.contents[0].text == "item 7"
    assert {"old.greet", "new.greet", "web.greet"} <= set(prompts)
    assert prompt.messages[0].content.text == "Hello, Ada!"
    assert completed.completion.values == ["ada", "alan"]


@pytest.mark.parametrize("era", list(HOSTS))
async def test_a_backend_error_names_the_backend(gateway: Gateway, era: str) -> None:
    async with host(gateway, era) as client:
        failed = await client.call_tool("new.fail")  # a tool's own failure: a result, as it came
        with pytest.raises(MCPError) as raised:
            await client.get_prompt("old.greet", {})  # a protocol error from the backend
        with pytest.raises(MCPError, match="Unknown tool"):
            await client.call_tool("nobody.fail")
    assert failed.is_error and "the backend's tool failed" in failed.text
    assert "backend 'old'" in raised.value.message


@pytest.mark.parametrize("backend", ["old", "new", "web"])
@pytest.mark.parametrize("era", list(HOSTS))
async def test_progress_sampling_roots_and_logs_reach_the_host(gateway: Gateway, era: str, backend: str) -> None:
    progress: list[float] = []
    logs: list[Any] = []
    async with host(gateway, era, sampling_callback=sample, roots=roots, logging_callback=logs.append) as client:
        counted = await client.call_tool(f"{backend}.count", progress_callback=lambda p, t, m: progress.append(p))
        summary = await client.call_tool(f"{backend}.summarize", {"text": "a long story"})
        if era != "2026-07-28":
            await client.set_logging_level("debug")
        said = await client.call_tool(f"{backend}.chatty")
    assert counted.text == "counted" and progress == [1, 2, 3]
    assert summary.text == "short: story | roots: file:///work"
    assert said.text == "said"
    if era != "2026-07-28":  # 2026 logs only when the request asks for a level in _meta
        assert [entry.get("data") for entry in logs] == ["careful now"]


async def cancel_a_wait(client: Client, state: Path, backend: str, mark: str) -> None:
    """Call the backend's waiting tool, give up on it, and see the backend's tool cancelled."""
    with pytest.raises(MCPError, match="timed out"):  # our request times out: the client cancels it
        await client.call_tool(f"{backend}.wait", {"mark": mark}, timeout=0.5)
    await wait_until((state / f"cancelled-{mark}").exists, 10, f"{backend}'s tool to be cancelled")


@pytest.mark.parametrize("backend", ["old", "new", "web"])
@pytest.mark.parametrize("era", list(HOSTS))
async def test_cancelling_on_the_host_reaches_the_backend(
    gateway: Gateway, state: Path, era: str, backend: str
) -> None:
    async with host(gateway, era) as client:
        await cancel_a_wait(client, state, backend, f"{backend}-{era}")
        assert (await client.call_tool(f"{backend}.book")).text == "booked 3 for Ada"  # the backend carries on


@pytest.mark.parametrize("backend", ["old", "new", "web"])
@pytest.mark.parametrize("era", ["2025-06-18", "2025-11-25"])
async def test_a_host_that_gives_up_mid_question_has_it_withdrawn(gateway: Gateway, era: str, backend: str) -> None:
    """A host asked in place gives up while the backend's question is still with it: the question
    is withdrawn from the host (its callback cancelled), and the next call on the same connection
    to the backend is answered (no connection is left holding the abandoned call)."""
    withdrawn = anyio.Event()
    person = Person()

    async def stuck(request: Any) -> Any:  # the first question: the person never answers it
        try:
            await anyio.sleep_forever()
        finally:
            withdrawn.set()

    answers: list[Any] = [stuck, person]

    async def callback(request: Any) -> Any:
        return await answers.pop(0)(request)

    async with Client(gateway, elicitation_callback=callback, **HOSTS[era]) as client:
        with anyio.move_on_after(1.0) as gave_up:  # the host cancels its call (notifications/cancelled)
            await client.call_tool(f"{backend}.book")
        assert gave_up.cancelled_caught
        with anyio.fail_after(10):
            await withdrawn.wait()
        assert (await client.call_tool(f"{backend}.book")).text == "booked 3 for Ada"


async def test_a_dead_stdio_backend_is_restarted(gateway: Gateway) -> None:
    async with host(gateway, "2025-11-25") as client:
        first = (await client.call_tool("old.pid")).structured_content
        assert first is not None
        os.kill(int(first["result"]), signal.SIGKILL)
        errors: list[str] = []
        with anyio.fail_after(10):
            while True:  # a call racing the death gets an error naming the backend; the next one a new process
                try:
                    result = await client.call_tool("old.pid")
                except MCPError as exc:
                    errors.append(exc.message)
                    continue
                if result.structured_content != first:
                    break
                await anyio.sleep(0.05)
        assert all("backend 'old'" in said for said in errors) and len(errors) <= 1
        assert (await client.call_tool("new.book")).text == "booked 3 for Ada"


async def test_a_dead_http_backend_is_reported_and_the_others_go_on(state: Path) -> None:
    from kit.processes import stop_process

    argv = lambda port: [sys.executable, str(BACKEND), "http", str(port)]  # noqa: E731
    with serve_on_free_port(argv, "backend", env={**os.environ, "GATEWAY_TEST_STATE": str(state)}) as served:
        url, proc = f"http://127.0.0.1:{served[0]}/mcp", served[1]
        config = parse_config(
            {"backends": [*backends(official=False), {"name": "web", "url": url, "namespace": "web."}]}
        )
        async with Gateway(config).running() as gateway, host(gateway, "2025-11-25") as client:
            assert (await client.call_tool("web.book")).text == "booked 3 for Ada"
            stop_process(proc)
            with pytest.raises(MCPError) as raised:
                await client.call_tool("web.book")
            assert "backend 'web'" in raised.value.message
            assert (await client.call_tool("old.book")).text == "booked 3 for Ada"
            listed = {t.name for t in (await client.list_tools()).tools}
    assert "old.book" in listed


@pytest.mark.parametrize("era", list(HOSTS))
async def test_hosts_that_cannot_take_a_question_as_asked(gateway: Gateway, era: str) -> None:
    no_elicitation = Client(gateway, **HOSTS[era])
    async with no_elicitation as client:
        url = await client.call_tool("old.connect")  # a URL question: the link, in the result
        gated = await client.call_tool("old.gated", {"ticket": f"none-{era}"})  # -32042: an isError result
    assert "https://auth.example.com/sign-in" in url.text
    assert gated.is_error and "cannot open URL elicitations" in gated.text


async def test_a_form_only_2026_host_gets_a_url_question_as_a_form(gateway: Gateway) -> None:
    person = Person()
    async with Client(gateway, elicitation_callback=person, elicitation_modes=("form",), mode="modern") as client:
        result = await client.call_tool("new.connect")
    assert result.text == "connect: accept"
    assert person.urls() == [] and "https://auth.example.com/sign-in" in person.forms()[0]


@pytest.mark.parametrize("backend", ["old", "new"])
@pytest.mark.parametrize("era", ["2025-11-25", "2026-07-28"])
async def test_sampling_a_host_that_cannot_sample(gateway: Gateway, era: str, backend: str) -> None:
    async with host(gateway, era, roots=roots) as client:  # roots, but no sampling callback
        with pytest.raises(MCPError) as raised:
            await client.call_tool(f"{backend}.summarize", {"text": "x"})
    if era == "2026-07-28":  # the host's own era's answer: this request needs sampling
        assert raised.value.code == -32021
    else:  # the backend was told what the host would have said (-32601), and its error names it
        assert raised.value.code == -32601 and f"backend '{backend}'" in raised.value.message
    assert "sampling" in raised.value.message


async def test_a_list_change_reaches_the_hosts(gateway: Gateway) -> None:
    heard: list[str] = []
    async with host(gateway, "2025-11-25", notification_callback=lambda method, params: heard.append(method)) as client:
        assert (await client.call_tool("web.grow", {"name": "sprout"})).text == "added sprout"
        await wait_until(lambda: "web.sprout" in gateway.catalogue.tools, 10, "the gateway to list the new tool")
        await wait_until(lambda: "notifications/tools/list_changed" in heard, 10, "the host to hear of it")
        assert "web.sprout" in {t.name for t in (await client.list_tools()).tools}
        assert (await client.call_tool("web.sprout")).text == "sprout is here"


@pytest.mark.parametrize("era", list(HOSTS))
async def test_a_backend_task_asks_a_host_without_tasks_as_an_ordinary_question(gateway: Gateway, era: str) -> None:
    person = Person()
    async with Client(gateway, elicitation_callback=person, **HOSTS[era]) as client:
        result = await client.call_tool("new.report")
    assert result.text == "report for Ada" and person.forms() == ["Who is the report for?"]


@pytest.fixture(scope="module")
async def sdk_gateway(state: Path) -> AsyncIterator[Gateway]:
    """The official SDK's, FastMCP's and the TypeScript SDK's servers behind one gateway."""
    config = parse_config({"backends": [b for b in backends() if b["name"] in ("off", "fast", "ts")]})
    async with Gateway(config).running() as running:
        yield running


SDK_BACKENDS = [
    "off",
    "fast",
    pytest.param("ts", marks=pytest.mark.skipif(typescript_sdk() is None, reason="no TS SDK")),
]


@pytest.mark.parametrize("backend", SDK_BACKENDS)
@pytest.mark.parametrize("era", list(HOSTS))
async def test_cancelling_on_the_host_reaches_the_sdk_backends(
    sdk_gateway: Gateway, state: Path, era: str, backend: str
) -> None:
    async with host(sdk_gateway, era) as client:
        await cancel_a_wait(client, state, backend, f"sdk-{backend}-{era}")


@pytest.mark.parametrize("backend", ["old", "web"])
async def test_the_completion_notice_reaches_a_2025_11_25_host(gateway: Gateway, backend: str) -> None:
    async with host(gateway, "2025-11-25") as client:
        result = await client.call_tool(f"{backend}.connect")
        # the backend sent notifications/elicitation/complete for its URL question; the gateway passed it on
        assert await client.wait_for_elicitation_complete("sign-in-1", timeout=5)
    assert result.text == "connect: accept"


@pytest.mark.parametrize("era", ["2025-06-18", "2026-07-28"])
async def test_a_host_whose_era_has_no_completion_notice_gets_none(gateway: Gateway, era: str) -> None:
    """The host request's scope decides (06-18 has no URL mode; 2026's retry brings the answer):
    the call goes through, the backend's notice goes no further."""
    async with host(gateway, era) as client:
        result = await client.call_tool("old.connect")
        # on its way, the notice would have come before the result, on the same stream
        assert not await client.wait_for_elicitation_complete("sign-in-1", timeout=0.3)
    assert result.text == "connect: accept"
