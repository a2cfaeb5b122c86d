"""Asking cannot be swallowed: a tool that guards its question with ``except Exception`` gets
the same answer on 2026-07-28 (where the question ends the round) as on 2025-11-25 (where it
is sent mid-call), over stdio and over HTTP, with the real client driving the rounds."""

from __future__ import annotations

import logging
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from elicitkit import Client
from elicitkit.elicitation.requests import ElicitRequest
from elicitkit.elicitation.results import ElicitationResult
from elicitkit.transports.http.serve import serve_http_background

from .swallowing_server import build_server

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

SCRIPT = Path(__file__).with_name("swallowing_server.py")
ROOTS = [{"uri": "file:///work/a", "name": "a"}, {"uri": "file:///work/b", "name": "b"}]

EXPECTED = {
    "guarded_elicit": "hello Ada",
    "guarded_resolver": "size L",
    "guarded_sample": "model says 4",
    "guarded_roots": "roots file:///work/a,file:///work/b",
    "guarded_with_timeout": "hello Ada",
    "guarded_in_task_group": "name='Ada' / size='L'",
    "guarded_in_thread": "hello Ada",
}


async def _answer(request: ElicitRequest) -> ElicitationResult[Any]:
    return ElicitationResult.accept({"size": "L"} if "size" in request.message.lower() else {"name": "Ada"})


async def _sample(params: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "4"}, "model": "m", "stopReason": "endTurn"}


@pytest.fixture(scope="module")
async def http_url() -> AsyncIterator[str]:
    async with serve_http_background(build_server(), port=0) as handle:
        yield handle.url


@pytest.fixture(params=["stdio", "http"])
def target(request: pytest.FixtureRequest, http_url: str) -> Any:
    return [sys.executable, str(SCRIPT)] if request.param == "stdio" else http_url


@pytest.mark.parametrize("mode", ["legacy", "modern"])
async def test_a_guarded_question_gets_the_same_answer_on_both_eras(
    target: Any, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    client = Client(target, mode=mode, elicitation_callback=_answer, sampling_callback=_sample, roots=ROOTS)
    with caplog.at_level(logging.WARNING):
        async with client:
            answers = {tool: (await client.call_tool(tool, {})).text for tool in EXPECTED}
    assert answers == EXPECTED
    crashes = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert not crashes, [r.getMessage() for r in crashes]  # the signal is never logged as a failure
