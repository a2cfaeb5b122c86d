"""What the gateway tests share: the backend scripts, a config for them, a host's scripted person."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from elicitkit import Client, ElicitationResult, FormRequest, InputRequiredResult, UrlRequest
from elicitkit.elicitation.requests import ElicitRequest
from kit.processes import serve_on_free_port

HERE = Path(__file__).parent
BACKEND = HERE / "peers" / "backend.py"
OFFICIAL_BACKEND = HERE / "peers" / "official_backend.py"  # the interop peer, plus a tool that waits
FASTMCP_BACKEND = HERE / "peers" / "fastmcp_backend.py"
TS_BACKEND = HERE / "peers" / "ts_backend.cjs"
TS_HOST = HERE / "peers" / "ts_host.cjs"


def typescript_sdk() -> tuple[str, str] | None:
    """node and a node_modules holding the TypeScript SDK v1 (the conformance suite's own
    dependency, installed by scripts/bootstrap.sh), or None where they are missing."""
    cache = Path(os.environ.get("ELICITKIT_CACHE") or HERE.parents[1] / ".cache")
    node = cache / "node22" / "node_modules" / ".bin" / "node"
    modules = cache / "conformance" / "0.1.16" / "node_modules"
    if node.is_file() and (modules / "@modelcontextprotocol" / "sdk" / "package.json").is_file():
        return str(node), str(modules)
    return None


def backends(*, official: bool = True) -> list[dict[str, Any]]:
    """The matrix's backends: our server spoken to on 2025-11-25 and on 2026-07-28 only, and the official SDK's."""
    found: list[dict[str, Any]] = [
        {"name": "old", "command": [sys.executable, str(BACKEND)], "namespace": "old.", "mode": "legacy"},
        {"name": "new", "command": [sys.executable, str(BACKEND)], "namespace": "new.", "mode": "modern"},
    ]
    if official:
        found.append({"name": "off", "command": [sys.executable, str(OFFICIAL_BACKEND), "stdio"], "namespace": "off."})
        found.append({"name": "fast", "command": [sys.executable, str(FASTMCP_BACKEND)], "namespace": "fast."})
        sdk = typescript_sdk()
        if sdk is not None:
            found.append(
                {"name": "ts", "command": [sdk[0], str(TS_BACKEND)], "namespace": "ts.", "env": {"NODE_PATH": sdk[1]}}
            )
    return found


@contextlib.contextmanager
def gateway_process(config: dict[str, Any], where: Path, env: dict[str, str]) -> Iterator[str]:
    """``elicitkit gateway CONFIG --transport http`` on a free port; its MCP URL."""
    path = where / "gateway.json"
    path.write_text(json.dumps(config))
    exe = Path(sys.executable).parent / "elicitkit"

    def argv(port: int) -> list[str]:
        return [str(exe), "gateway", str(path), "--transport", "http", "--port", str(port)]

    with serve_on_free_port(argv, "gateway", env=env) as served:
        yield f"http://127.0.0.1:{served[0]}/mcp"


class Person:
    """A host's person: fills the booking form, opens every page, and keeps what they were asked."""

    def __init__(self) -> None:
        self.asked: list[ElicitRequest] = []

    async def __call__(self, request: ElicitRequest) -> ElicitationResult[Any]:
        self.asked.append(request)
        if isinstance(request, FormRequest):
            fields = request.requested_schema.get("properties", {})
            if "done" in fields:  # a URL put to a host that takes forms only
                return ElicitationResult.accept({"done": True})
            if "name" in fields and "seats" in fields:
                return ElicitationResult.accept({"name": "Ada", "seats": 3})
            if "name" in fields:  # the official backend's seating form
                return ElicitationResult.accept({"name": "Ada"})
            return ElicitationResult.decline()
        assert isinstance(request, UrlRequest)
        return ElicitationResult.accept()

    def urls(self) -> list[str]:
        return [r.url for r in self.asked if isinstance(r, UrlRequest)]

    def forms(self) -> list[str]:
        return [r.message for r in self.asked if isinstance(r, FormRequest)]


async def start(target: Any, tool: str, mark: str) -> InputRequiredResult:
    """A 2026 host's first round of ``tool`` at ``target`` (a gateway, or its URL), left unanswered."""
    async with Client(target, mode="modern", elicitation_callback=Person()) as host:
        pending = await host.call_tool(tool, {"mark": mark}, input_required="return")
    assert isinstance(pending, InputRequiredResult)
    return pending


async def resume(target: Any, pending: InputRequiredResult, **options: Any) -> Any:
    """Another 2026 host carries ``pending`` on at ``target`` (wherever the balancer sends it)."""
    async with Client(target, mode="modern", elicitation_callback=Person()) as host:
        return await host.resume(pending, **options)
