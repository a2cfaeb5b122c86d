"""The :class:`Gateway`: an elicitkit :class:`~elicitkit.Server` whose tools, prompts and
resources are those of its backends, reached through elicitkit :class:`~elicitkit.Client`
connections (:mod:`elicitkit.gateway.backend`), with every question a backend asks put to the
host through the host request's own scope (:mod:`elicitkit.gateway.bridge`). Serving hosts is
the server's (every era, stdio and Streamable HTTP, the page ladder); talking to backends is
the client's (every era, both transports): nothing here speaks the protocol itself.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal

import anyio
from anyio.abc import TaskGroup

from elicitkit.backplane.base import Backplane
from elicitkit.gateway.backend import Backend, BackendUnavailable, Lease
from elicitkit.gateway.bridge import Parked, forward, send_complete
from elicitkit.gateway.catalogue import Catalogue, Entry, Listing
from elicitkit.gateway.config import GatewayConfig, load_config
from elicitkit.gateway.fleet import CallRelay
from elicitkit.protocol.errors import INVALID_PARAMS, MCPError
from elicitkit.protocol.jsonrpc import JSON
from elicitkit.protocol.modern import InvalidToolHeaders, tool_header_params
from elicitkit.server.methods import page
from elicitkit.server.pages import CLAIM_ARGUMENT
from elicitkit.server.scope import RequestScope
from elicitkit.server.server import Server

__all__ = ["Gateway"]

logger = logging.getLogger("elicitkit.gateway")

_LIST_KEYS = {
    "tools/list": "tools",
    "prompts/list": "prompts",
    "resources/list": "resources",
    "resources/templates/list": "resourceTemplates",
}
_CHANGED = {
    "notifications/tools/list_changed": "notifications/tools/list_changed",
    "notifications/prompts/list_changed": "notifications/prompts/list_changed",
    "notifications/resources/list_changed": "notifications/resources/list_changed",
}


class Gateway(Server):
    """One MCP server in front of several: ``async with gateway.running(): ...`` (or
    :meth:`run` / ``elicitkit gateway CONFIG``).

    Hosts of every era see one server; each backend keeps its own era. A backend that cannot be
    reached is left out of the lists (and named in the error of a call to it), never taking the
    others down; a stdio backend whose process died is started again by the next call.
    """

    def __init__(self, config: GatewayConfig, **server_options: Any) -> None:
        self.parked = Parked()  # before the server's own init, which may be given a backplane
        super().__init__(config.name, config.version, **server_options)
        self.config = config
        self.backends: dict[str, Backend] = {b.name: Backend(b, self._backend_notified) for b in config.backends}
        self.catalogue = Catalogue()
        for backend in config.backends:
            self.catalogue.set(backend.name, backend.namespace, None)
        self._tg: TaskGroup | None = None
        self.configure_pages(fallback=config.fallback, deadline=config.deadline, public_url=config.public_url)
        handlers: dict[str, Callable[[RequestScope], Awaitable[JSON]]] = {
            "tools/list": self._list,
            "prompts/list": self._list,
            "resources/list": self._list,
            "resources/templates/list": self._list,
            "tools/call": self._call_tool,
            "prompts/get": self._get_prompt,
            "resources/read": self._read_resource,
            "completion/complete": self._complete,
        }
        for method, handler in handlers.items():
            self.set_request_handler(method, handler)

    @classmethod
    def from_file(cls, path: str | Path, **server_options: Any) -> Gateway:
        """A gateway from a TOML (or ``.json``) file; :class:`~elicitkit.gateway.ConfigError` if it is wrong."""
        return cls(load_config(path), **server_options)

    # -- lifecycle ---------------------------------------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Gateway]:
        """Backends connected (lists fetched; one that fails is reported and left out) until exit."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            for backend in self.backends.values():
                backend.attach(tg)
            await self.refresh()
            try:
                yield self
            finally:
                self.parked.cancel_all()
                if self.parked.relay is not None:
                    self.parked.relay.stopped()
                for backend in self.backends.values():
                    await backend.aclose()
                self._tg = None
                tg.cancel_scope.cancel()

    async def run_async(
        self,
        transport: Literal["stdio", "http"] = "stdio",
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        path: str = "/mcp",
        **options: Any,
    ) -> None:
        if transport == "http" and self.config.redis is not None and self.backplane is None:
            from elicitkit.backplane.redis_backplane import RedisBackplane

            self.use_backplane(RedisBackplane.from_url(self.config.redis))
        async with self.running():
            await super().run_async(transport, host=host, port=port, path=path, **options)

    def use_backplane(self, backplane: Backplane) -> None:
        """A fleet's backplane also shares the 2026 hosts' parked backend calls (:mod:`.fleet`)."""
        super().use_backplane(backplane)
        place = backplane.redis() if backplane.shared else None
        if place is not None:
            self.parked.relay = CallRelay(place, backplane.instance_id, self.parked.ttl)

    def _group(self) -> TaskGroup:
        if self._tg is None:
            raise MCPError(INVALID_PARAMS, "the gateway is not running (use `async with gateway.running():`)")
        return self._tg

    # -- lists ---------------------------------------------------------------------------------

    async def refresh(self, *names: str) -> None:
        """Fetch the lists of ``names`` (default: every backend), concurrently."""
        async with anyio.create_task_group() as tg:
            for name in names or tuple(self.backends):
                tg.start_soon(self._refresh_one, self.backends[name])

    async def _refresh_one(self, backend: Backend) -> None:
        try:
            listing = Listing()
            caps = await self._capabilities_of(backend)
            if "tools" in caps:
                listing.tools = await self._all(backend, "tools/list", "tools")
            if "prompts" in caps:
                listing.prompts = await self._all(backend, "prompts/list", "prompts")
            if "resources" in caps:
                listing.resources = await self._all(backend, "resources/list", "resources")
                listing.templates = await self._all(backend, "resources/templates/list", "resourceTemplates")
        except MCPError as exc:
            logger.warning("backend %s: cannot list what it offers: %s", backend.name, exc.message)
            backend.last_error = exc.message
            self.catalogue.set(backend.name, backend.config.namespace, None)
            return
        self.catalogue.set(backend.name, backend.config.namespace, listing)

    async def _capabilities_of(self, backend: Backend) -> JSON:
        lease = await backend.lease()
        try:
            return dict(lease.client.server_capabilities)
        finally:
            backend.release(lease)

    async def _all(self, backend: Backend, method: str, key: str) -> list[JSON]:
        items: list[JSON] = []
        cursor: str | None = None
        for _ in range(1000):  # a backend whose cursors never end stops here
            result = await backend.request(method, {"cursor": cursor} if cursor else None)
            found = result.get(key)
            items.extend(item for item in (found if isinstance(found, list) else []) if isinstance(item, dict))
            cursor = result.get("nextCursor") if isinstance(result.get("nextCursor"), str) else None
            if not cursor:
                break
        return items

    async def _list(self, scope: RequestScope) -> JSON:
        down = [name for name in self.backends if name not in self.catalogue.listings]
        if down:  # try again: a backend that was down may be back
            await self.refresh(*down)
        method = scope.request.method
        catalogue = self.catalogue
        items: list[Entry] = {
            "tools/list": lambda: list(catalogue.tools.values()),
            "prompts/list": lambda: list(catalogue.prompts.values()),
            "resources/list": lambda: list(catalogue.resources.values()),
            "resources/templates/list": lambda: [entry for _m, entry in catalogue.templates],
        }[method]()
        return page(self, items, scope.params, _LIST_KEYS[method])

    def tool_header_params(self, name: str) -> dict[str, str]:
        entry = self.catalogue.tools.get(name)
        schema = entry.shown.get("inputSchema") if entry is not None else None
        if not isinstance(schema, dict):
            return {}
        try:
            return tool_header_params(schema)
        except InvalidToolHeaders:
            return {}

    # -- calls ------------------------------------------------------------------------------------

    def _forward(self, scope: RequestScope, entry: Entry, method: str, params: JSON) -> Awaitable[JSON]:
        backend = self.backends[entry.backend]
        return scope.run(forward(scope, backend, method, params, self.parked, self._group()), self)

    def _call_tool(self, scope: RequestScope) -> Awaitable[JSON]:
        name = scope.params.get("name")
        entry = self.catalogue.tools.get(name) if isinstance(name, str) else None
        if entry is None:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {name!r}")
        arguments = scope.params.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise MCPError(INVALID_PARAMS, "tools/call: arguments must be an object")
        arguments = {k: v for k, v in arguments.items() if k != CLAIM_ARGUMENT}  # the gateway's own page claim
        return self._forward(scope, entry, "tools/call", {"name": entry.original, "arguments": arguments})

    def _get_prompt(self, scope: RequestScope) -> Awaitable[JSON]:
        name = scope.params.get("name")
        entry = self.catalogue.prompts.get(name) if isinstance(name, str) else None
        if entry is None:
            raise MCPError(INVALID_PARAMS, f"Unknown prompt: {name!r}")
        params: JSON = {"name": entry.original}
        arguments = scope.params.get("arguments")
        if arguments:
            params["arguments"] = arguments
        return self._forward(scope, entry, "prompts/get", params)

    def _read_resource(self, scope: RequestScope) -> Awaitable[JSON]:
        uri = scope.params.get("uri")
        if not isinstance(uri, str):
            raise MCPError(INVALID_PARAMS, "resources/read: uri must be a string")
        entry = self.catalogue.owner_of_uri(uri)
        if entry is None:
            raise self.resource_not_found(uri)
        return self._forward(scope, entry, "resources/read", {"uri": uri})

    async def _complete(self, scope: RequestScope) -> JSON:
        ref = scope.params.get("ref")
        if not isinstance(ref, dict):
            raise MCPError(INVALID_PARAMS, "completion/complete needs a ref object")
        entry: Entry | None = None
        if ref.get("type") == "ref/prompt" and isinstance(ref.get("name"), str):
            entry = self.catalogue.prompts.get(ref["name"])
            forwarded = {**ref, "name": entry.original} if entry is not None else ref
        elif isinstance(ref.get("uri"), str):
            entry = self.catalogue.owner_of_template(ref["uri"]) or self.catalogue.owner_of_uri(ref["uri"])
            forwarded = ref
        if entry is None:
            raise MCPError(INVALID_PARAMS, f"completion/complete: no backend has {ref!r}")
        params = {k: v for k, v in scope.params.items() if k in ("argument", "context")}
        return await self.backends[entry.backend].request("completion/complete", {**params, "ref": forwarded})

    # -- what backends tell us -----------------------------------------------------------------

    async def _backend_notified(self, backend: Backend, lease: Lease, method: str, params: JSON) -> None:
        """A backend's notification (called inline by its connection's reader: nothing here waits
        on that backend; a list refresh runs in a task of its own)."""
        call = lease.call
        if method in _CHANGED:
            if self._tg is not None:
                self._tg.start_soon(self._changed, backend, method)
        elif method == "notifications/resources/updated" and isinstance(params.get("uri"), str):
            await self.notify_resource_updated(params["uri"])
        elif method == "notifications/message":
            scope = call.scope if call is not None else None
            if scope is not None:
                level = params.get("level") if isinstance(params.get("level"), str) else "info"
                name = params.get("logger")
                await scope.log(str(level), params.get("data"), f"{backend.name}.{name}" if name else backend.name)
        elif method == "notifications/elicitation/complete" and isinstance(params.get("elicitationId"), str):
            await send_complete(call.scope if call is not None else None, params["elicitationId"])

    async def _changed(self, backend: Backend, method: str) -> None:
        try:
            await self.refresh(backend.name)
        except BackendUnavailable:
            return
        await self._notify_everywhere(method, None)
