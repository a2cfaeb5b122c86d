"""``elicitkit gateway CONFIG`` serving one host over stdio (the way desktop hosts start servers),
on every era: the same questions get through."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from elicitkit import Client

from .support import Person, backends

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

HOSTS = {"2025-06-18": {"protocol_version": "2025-06-18"}, "2025-11-25": {}, "2026-07-28": {"mode": "modern"}}


@pytest.mark.parametrize("era", list(HOSTS))
async def test_a_stdio_host_on_every_era(tmp_path: Path, era: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GATEWAY_TEST_STATE", str(tmp_path))
    config = tmp_path / "gateway.json"
    config.write_text(json.dumps({"backends": backends(official=False)}))
    command = [str(Path(sys.executable).parent / "elicitkit"), "gateway", str(config)]
    person = Person()
    async with Client(command, elicitation_callback=person, timeout=30, **HOSTS[era]) as client:
        old = await client.call_tool("old.book")
        new = await client.call_tool("new.connect")
        gated = await client.call_tool("new.gated", {"ticket": era})
    assert (old.text, new.text, gated.text) == ("booked 3 for Ada", "connect: accept", f"report for {era}")
    assert person.forms()[0] == "Who is booking?" and (tmp_path / f"ticket-{era}").is_file()
