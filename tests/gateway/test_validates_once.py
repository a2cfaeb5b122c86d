"""One validation per side through the gateway: the host's answer is checked by the host's client
and by the gateway's server side; the gateway's client side sends that checked answer on to the
backend without judging it again, unless the host was asked a down-converted schema (then the
backend's own schema still has to be checked, defaults filled). The backend, in its own process,
checks once more on its side; it is not counted here."""

from __future__ import annotations

import collections
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import elicitkit.elicitation.answers as answers
from elicitkit import Client, ElicitationResult
from elicitkit.elicitation.requests import ElicitRequest
from elicitkit.gateway import Gateway, parse_config

from .support import backends

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


@pytest.fixture(scope="module")
async def gateway(state: Path) -> AsyncIterator[Gateway]:
    config = parse_config({"name": "gw", "backends": [b for b in backends(official=False) if b["name"] == "old"]})
    async with Gateway(config).running() as running:
        yield running


async def name_only(request: ElicitRequest) -> ElicitationResult[Any]:
    return ElicitationResult.accept({"name": "Ada"})  # "seats" left to its default (2)


@pytest.mark.parametrize(("version", "per_call"), [("2025-11-25", 2), ("2025-06-18", 3)])
async def test_the_gateway_checks_a_hosts_answer_once(
    monkeypatch: pytest.MonkeyPatch, gateway: Gateway, version: str, per_call: int
) -> None:
    counts: collections.Counter[str] = collections.Counter()
    check = answers.validate_answer

    def counted(*args: Any, **kwargs: Any) -> Any:
        counts["schema"] += 1
        return check(*args, **kwargs)

    monkeypatch.setattr(answers, "validate_answer", counted)
    async with Client(gateway, protocol_version=version, elicitation_callback=name_only) as client:
        texts = [(await client.call_tool("old.book")).text for _ in range(3)]
    # the default reached the backend whichever side filled it in
    assert texts == ["booked 2 for Ada"] * 3
    # 2025-11-25: the host's client and the gateway's server side; 2025-06-18 (the schema was
    # down-converted for the host, defaults dropped): the gateway's client side checks as well
    assert counts["schema"] == 3 * per_call
