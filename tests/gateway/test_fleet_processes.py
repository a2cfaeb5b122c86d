"""Two ``elicitkit gateway --transport http --redis URL`` processes behind a round-robin haproxy
on one real ``redis-server``: a 2026 host's rounds alternate instances and the backend call runs
once; a 2025 host's question is answered through either instance, and so is the gateway's page
for a host that cannot ask; one instance killed (-9) while questions wait on the other: those
complete, and the dead one's parked call is replayed; Redis stopped: clear errors, nothing lost.

The last two tests kill an instance, then stop Redis: they run last, on the module's fleet.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import anyio
import httpx
import pytest

from elicitkit import Client, ElicitationResult, MCPError
from elicitkit.client.rounds import InputRequiredResult
from elicitkit.elicitation.requests import ElicitRequest
from elicitkit.server.rounds import KeyRing
from elicitkit.server.rounds.keys import ENV_VAR as STATE_KEYS
from kit.fleet import Balancer, RedisServer, redis_server, round_robin
from kit.page_tab import Tab
from kit.processes import free_port, serve_several_on_free_ports

from .support import Person, backends, resume, start

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(90)]


def test_a_redis_option_that_is_no_redis_url_is_refused(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from elicitkit.cli import main

    config = tmp_path / "gw.json"
    config.write_text(json.dumps({"backends": backends(official=False)[:1]}))
    args = ["gateway", str(config), "--transport", "http", "--redis", "http://user:s3cret@h:6379"]
    outcome = CliRunner().invoke(main, args)
    assert outcome.exit_code == 2
    assert "--redis" in outcome.output and "redis://" in outcome.output and "s3cret" not in outcome.output


@dataclass
class Member:
    port: int
    process: Any
    log: IO[bytes]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"


@dataclass
class GatewayFleet:
    redis: RedisServer
    balancer: Balancer
    members: list[Member]


@pytest.fixture(scope="module")
def gw_fleet(state: Path) -> Iterator[GatewayFleet]:
    exe = Path(sys.executable).parent / "elicitkit"
    balancer_port = free_port()
    with redis_server() as rs, contextlib.ExitStack() as stack:
        # one instance finds its Redis in its file, the other on its command line
        configs = [state / "gateway-0.json", state / "gateway-1.json"]
        for config, redis_url in zip(configs, [rs.url, None], strict=True):
            table = {"name": "gw", "public_url": f"http://127.0.0.1:{balancer_port}"}  # pages via the balancer
            if redis_url:
                table["redis"] = redis_url
            config.write_text(json.dumps({"gateway": table, "backends": backends(official=False)[:1]}))
        env = {
            **os.environ,
            "ELICITKIT_FLEET_KEY": "gateway-fleet-tests",
            STATE_KEYS: KeyRing.generate_secret(),
        }
        env.pop("ELICITKIT_REDIS_URL", None)

        def in_file(port: int) -> list[str]:
            return [str(exe), "gateway", str(configs[0]), "--transport", "http", "--port", str(port)]

        def on_command_line(port: int) -> list[str]:
            return [*in_file(port)[:2], str(configs[1]), *in_file(port)[3:], "--redis", rs.url]

        starts = [(in_file, "gateway (redis in its file)", env), (on_command_line, "gateway (--redis)", env)]
        served = stack.enter_context(serve_several_on_free_ports(starts))
        members = [Member(port, proc, log) for port, proc, log in served]
        balancer = stack.enter_context(round_robin([m.port for m in members], port=balancer_port))
        yield GatewayFleet(rs, balancer, members)


def runs(state: Path, mark: str) -> int:
    return int((state / f"runs-{mark}").read_text())


async def test_a_2026_host_s_rounds_on_either_instance_continue_one_backend_call(
    gw_fleet: GatewayFleet, state: Path
) -> None:
    a, b = gw_fleet.members
    with anyio.fail_after(30):
        first = await start(a.url, "old.two_questions", "p-direct")  # parked on a
        second = await resume(b.url, first, input_required="return")  # b drives a's call
        assert isinstance(second, InputRequiredResult) and list(second.input_requests) == ["g2"]
        done = await resume(b.url, second)
        assert done["content"][0]["text"] == "Ada, then Ada"
        assert runs(state, "p-direct") == 1
        for n in range(3):  # through the balancer: every request on the next instance
            mark = f"p-balanced-{n}"
            async with Client(gw_fleet.balancer.url, mode="modern", elicitation_callback=Person()) as host:
                done = await host.call_tool("old.two_questions", {"mark": mark})
            assert done.text == "Ada, then Ada"
            assert runs(state, mark) == 1  # never replayed, wherever the retries landed


async def test_a_2025_host_s_questions_through_the_balancer(gw_fleet: GatewayFleet) -> None:
    person = Person()
    with anyio.fail_after(30):
        async with Client(gw_fleet.balancer.url, mode="legacy", elicitation_callback=person) as host:
            for _ in range(3):
                assert (await host.call_tool("old.book")).text == "booked 3 for Ada"
    assert person.forms() == ["Who is booking?"] * 3


@pytest.mark.parametrize("era", [{"protocol_version": "2025-11-25"}, {"mode": "modern"}], ids=["2025", "2026"])
async def test_a_host_that_cannot_ask_answers_on_the_page_through_either_instance(
    gw_fleet: GatewayFleet, era: dict[str, Any]
) -> None:
    """No elicitation: the call ends with the gateway's page; the page's GETs and POSTs and the
    call again go round-robin; the answer reaches the call again, wherever it lands."""
    with anyio.fail_after(30):
        async with Client(gw_fleet.balancer.url, **era) as host, httpx.AsyncClient(timeout=15) as raw:
            first = await host.call_tool("old.book")
            link = re.search(r"http://127\.0\.0\.1:\d+/mcp/ask/[A-Za-z0-9_\-]+", first.text)
            assert link is not None and link.group(0).startswith(gw_fleet.balancer.url), first.text
            await Tab(raw).answer(link.group(0), "Grace")
            claim = (first.structured_content or {}).get("addArguments", {})  # 2026, anonymous: the claim
            again = await host.call_tool("old.book", claim)
    assert again.text == "booked 2 for Grace"


async def test_an_instance_killed_questions_held_by_the_other_complete(gw_fleet: GatewayFleet, state: Path) -> None:
    """Runs last: kills one instance of the module's fleet."""
    a, b = gw_fleet.members
    asked = anyio.Event()
    go_on = anyio.Event()

    async def slow_person(request: ElicitRequest) -> ElicitationResult[Any]:
        asked.set()
        await go_on.wait()
        return await Person()(request)

    outcome: dict[str, Any] = {}
    with anyio.fail_after(60):
        async with Client(b.url, mode="legacy", elicitation_callback=slow_person) as legacy:  # a session b holds
            held = await start(b.url, "old.book_counted", "k-held")  # parked on b
            lost = await start(a.url, "old.book_counted", "k-lost")  # parked on a

            async def ask() -> None:
                outcome["legacy"] = (await legacy.call_tool("old.book")).text

            async with anyio.create_task_group() as tg:
                tg.start_soon(ask)
                await asked.wait()  # the 2025 question waits on b's session
                a.process.kill()
                a.process.wait(timeout=10)
                go_on.set()
        assert outcome["legacy"] == "booked 3 for Ada"
        done = await resume(gw_fleet.balancer.url, held)  # b's parked call: continued, not replayed
        assert done["content"][0]["text"] == "booked 3 for Ada"
        assert runs(state, "k-held") == 1
        done = await resume(gw_fleet.balancer.url, lost)  # a's died with it: started again on b
        assert done["content"][0]["text"] == "booked 3 for Ada"
        assert runs(state, "k-lost") == 2


async def test_redis_gone_clear_errors_and_nothing_is_lost(gw_fleet: GatewayFleet, state: Path) -> None:
    """Runs after the kill: the survivor alone, its Redis stopped, then started again (empty)."""
    survivor = gw_fleet.members[1]
    with anyio.fail_after(60):
        pending = await start(survivor.url, "old.book_counted", "r-gone")
        gw_fleet.redis.stop()
        try:
            # a new call cannot be parked where the fleet would find it: stopped, and said so
            with pytest.raises(MCPError, match=r"shared store \(Redis\) is unreachable.*stopped; try again"):
                await start(survivor.url, "old.book_counted", "r-new")
            # the call parked before the outage waits where it was: its retry there continues it
            done = await resume(gw_fleet.balancer.url, pending)
            assert done["content"][0]["text"] == "booked 3 for Ada"
            assert runs(state, "r-gone") == 1
        finally:
            gw_fleet.redis.start()
        await anyio.sleep(1.5)  # a heartbeat registers the survivor again
        async with Client(gw_fleet.balancer.url, mode="modern", elicitation_callback=Person()) as host:
            assert (await host.call_tool("old.book_counted", {"mark": "r-back"})).text == "booked 3 for Ada"
