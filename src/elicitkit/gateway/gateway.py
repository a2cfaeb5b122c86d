"""The :class:`Gateway`: an elicitkit :class:`~elicitkit.Server` whose tools, prompts and
resources are those of its backends, reached through elicitkit :class:`~elicitkit.Client`
connections (:mod:`elicitkit.gateway.backend`), with every question a backend asks put to the
host through the host request's own scope (:mod:`elicitkit.gateway.bridge`). Serving hosts is
the server's (every era, stdio and Streamable HTTP, the page ladder); talking to backends is
the client's (every era, both transports): nothing here speaks the protocol itself.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

import anyio
from anyio.abc import TaskGroup

from elicitkit.backplane.base import Backplane
from elicitkit.gateway.accounts import Accounts, connections_for
from elicitkit.gateway.auth import front_door
from elicitkit.gateway.backend import Backend, BackendUnavailable, Lease
from elicitkit.gateway.bridge import Parked, forward
from elicitkit.gateway.catalogue import Catalogue, Entry, Listing
from elicitkit.gateway.config import GatewayConfig, load_config
from elicitkit.gateway.errors import ConfigError
from elicitkit.gateway.fleet import CallRelay
from elicitkit.gateway.subscriptions import Subscriptions
from elicitkit.protocol import subscriptions as subs
from elicitkit.protocol.errors import INVALID_PARAMS, MCPError
from elicitkit.protocol.jsonrpc import JSON
from elicitkit.protocol.modern import InvalidToolHeaders, tool_header_params
from elicitkit.server.listen import listen
from elicitkit.server.methods import page
from elicitkit.server.pages import CLAIM_ARGUMENT
from elicitkit.server.scope import RequestScope
from elicitkit.server.server import Server
from elicitkit.server.tasks.serving import TaskOptions

if TYPE_CHECKING:
    from elicitkit.server.tools import Tool

__all__ = ["Gateway"]

_AS_TASK = TaskOptions("optional")


def uses_uvloop(choice: str) -> bool:
    """Whether ``choice`` (``auto``, ``asyncio``, ``uvloop``) means uvloop; :class:`ConfigError`
    when uvloop is asked for by name and is not installed."""
    if choice == "asyncio":
        return False
    found = importlib.util.find_spec("uvloop") is not None
    if choice == "uvloop" and not found:
        raise ConfigError("the uvloop event loop is not installed: pip install 'elicitkit[gateway]'")
    return found


@dataclass(frozen=True)
class _Named:
    """What the task support reads of a tool (its name) for a backend's tool, which has no Tool."""

    name: str


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
        if config.auth is not None and "auth" not in server_options:
            server_options["auth"] = front_door(config.auth)  # the front door: hosts' bearer tokens
        server_options["connections"] = connections_for(config, server_options.get("connections"))
        super().__init__(config.name, config.version, **server_options)
        self.config = config
        self.backends: dict[str, Backend] = {b.name: Backend(b, self._backend_notified) for b in config.backends}
        self.catalogue = Catalogue()
        for backend in config.backends:
            self.catalogue.set(backend.name, backend.namespace, None)
        self.accounts = Accounts(self)  # backends each person signs in to (auth.type = "connect")
        self.subscriptions = Subscriptions(self)  # hosts' resources/subscribe, forwarded once per URI
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
            "resources/subscribe": self._subscribe,
            "resources/unsubscribe": self._unsubscribe,
            subs.LISTEN: self._listen,
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
                await self.subscriptions.aclose()
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

    event_loop: Literal["auto", "asyncio", "uvloop"] = "auto"
    """The event loop :meth:`run` (and ``elicitkit gateway``) serves HTTP on: ``auto`` is uvloop
    when installed (``elicitkit[gateway]``), else asyncio's. Every forwarded message crosses two
    connections here, so the loop's own cost counts twice: uvloop spends about a sixth fewer
    instructions per forwarded call (docs/gateway.md, "Measured"). Stdio stays on asyncio's."""

    def loop_options(self, transport: Literal["stdio", "http"]) -> dict[str, Any]:
        return {"use_uvloop": transport == "http" and uses_uvloop(self.event_loop)}

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

    async def refresh(self, *names: str, principal: str | None = None) -> None:
        """Fetch the lists of ``names`` (default: every backend), concurrently (``principal``: with
        their connection, for backends each person signs in to)."""
        async with anyio.create_task_group() as tg:
            for name in names or tuple(self.backends):
                tg.start_soon(self._refresh_one, self.backends[name], principal)

    async def _refresh_one(self, backend: Backend, principal: str | None = None) -> None:
        if backend.name in self.accounts.waiting and principal is None:  # nobody's token to list it with
            self.catalogue.set(backend.name, backend.config.namespace, self.accounts.placeholder(backend.name))
            return
        try:
            listing = Listing()
            caps = await self._capabilities_of(backend, principal)
            if "tools" in caps:
                listing.tools = await self._all(backend, "tools/list", "tools", principal)
            if "prompts" in caps:
                listing.prompts = await self._all(backend, "prompts/list", "prompts", principal)
            if "resources" in caps:
                listing.resources = await self._all(backend, "resources/list", "resources", principal)
                listing.templates = await self._all(backend, "resources/templates/list", "resourceTemplates", principal)
        except MCPError as exc:
            logger.warning("backend %s: cannot list what it offers: %s", backend.name, exc.message)
            backend.last_error = exc.message
            if backend.name not in self.accounts.waiting:  # (one waiting for a sign-in keeps its sign-in tool)
                self.catalogue.set(backend.name, backend.config.namespace, None)
            return
        self.accounts.listed(backend.name)
        self.catalogue.set(backend.name, backend.config.namespace, listing)
        self._offer_tasks()
        if self._tg is not None and principal is None:
            self._tg.start_soon(self.subscriptions.watch, backend)  # a 2026 backend's changes come on a stream

    def _offer_tasks(self) -> None:
        """The tools hosts may run as tasks: those of backends with ``tasks = "optional"``."""
        if any(b.config.tasks != "never" for b in self.backends.values()):
            self.tasks.options = {
                name: _AS_TASK
                for name, entry in self.catalogue.tools.items()
                if self.backends[entry.backend].config.tasks == "optional"
            }

    async def _capabilities_of(self, backend: Backend, principal: str | None) -> JSON:
        lease = await backend.lease(principal)
        try:
            return dict(lease.client.server_capabilities)
        finally:
            backend.release(lease)

    async def _all(self, backend: Backend, method: str, key: str, principal: str | None) -> list[JSON]:
        items: list[JSON] = []
        cursor: str | None = None
        for _ in range(1000):  # a backend whose cursors never end stops here
            result = await backend.request(method, {"cursor": cursor} if cursor else None, principal)
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
        if self.accounts.waiting:
            await self.accounts.list_for(scope)
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
        if backend.name in self.accounts.names:  # the person's own account: signed in first
            if self.accounts.is_sign_in(entry):
                return scope.run(self.accounts.sign_in_tool(scope, backend.name), self)
            group = self._group()
            body = self.accounts.then(
                scope,
                backend.name,
                lambda: forward(scope, backend, method, params, self.parked, group),
                method == "tools/call",
            )
            return scope.run(body, self)
        return scope.run(forward(scope, backend, method, params, self.parked, self._group()), self)

    def _call_tool(self, scope: RequestScope) -> Awaitable[JSON]:
        name = scope.params.get("name")
        entry = self.catalogue.tools.get(name) if isinstance(name, str) else None
        if entry is None:
            raise MCPError(INVALID_PARAMS, f"Unknown tool: {name!r}")
        arguments = scope.params.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise MCPError(INVALID_PARAMS, "tools/call: arguments must be an object")
        if CLAIM_ARGUMENT in arguments:  # the gateway's own page claim: not the backend's
            arguments = {k: v for k, v in arguments.items() if k != CLAIM_ARGUMENT}
        if name in self.tasks.options:  # a host that declared the Tasks extension gets a task of the gateway's
            as_task = scope.as_task(self.tasks, cast("Tool", _Named(name)), arguments)
            if as_task is not None:
                return as_task
        return self._forward(scope, entry, "tools/call", {"name": entry.original, "arguments": arguments})

    def task_call(self, name: str, arguments: dict[str, Any], scope: RequestScope) -> Coroutine[Any, Any, JSON] | None:
        """One run of a host's task: the backend call, its questions parked in the task's record;
        not parked in memory (the next run, with the answers, calls the backend again)."""
        entry = self.catalogue.tools.get(name)
        if entry is None:
            return None
        params: JSON = {"name": entry.original, "arguments": arguments}
        return forward(
            scope, self.backends[entry.backend], "tools/call", params, self.parked, self._group(), park=False
        )

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
        return await self.backends[entry.backend].request(
            "completion/complete", {**params, "ref": forwarded}, scope.principal
        )

    async def _subscribe(self, scope: RequestScope) -> JSON:
        uri = scope.params.get("uri")
        if not isinstance(uri, str):
            raise MCPError(INVALID_PARAMS, "resources/subscribe: uri must be a string")
        session = scope.session
        session.subscriptions.add(uri)
        try:
            await self.subscriptions.add(session, uri, lambda: not session.peer.closed and uri in session.subscriptions)
        except BaseException:
            scope.session.subscriptions.discard(uri)
            raise
        return {}

    async def _unsubscribe(self, scope: RequestScope) -> JSON:
        uri = scope.params.get("uri")
        if not isinstance(uri, str):
            raise MCPError(INVALID_PARAMS, "resources/unsubscribe: uri must be a string")
        scope.session.subscriptions.discard(uri)
        await self.subscriptions.remove(scope.session, uri)
        return {}

    async def _listen(self, scope: RequestScope) -> JSON:
        """A 2026 listen stream: the server's own, its ``resourceSubscriptions`` held at the
        backends while it is open."""
        scope.serve_2026_only(subs.LISTEN)  # -32601 on a handshake session, before anything is held
        stream = object()
        held: list[str] = []
        try:
            for uri in subs.parse_listen(scope.params).resource_subscriptions:
                await self.subscriptions.add(stream, uri, lambda: True)
                held.append(uri)
            return await listen(self, scope)
        finally:
            with anyio.CancelScope(shield=True):
                for uri in held:
                    await self.subscriptions.remove(stream, uri)

    # -- what backends tell us -----------------------------------------------------------------

    async def _backend_notified(self, backend: Backend, lease: Lease, method: str, params: JSON) -> None:
        """A backend's notification (called inline by its connection's reader: nothing here waits
        on that backend; a list refresh runs in a task of its own)."""
        call = lease.call
        if method in _CHANGED:
            if self._tg is not None:
                who = lease.principal if backend.name in self.accounts.names else None  # (whose token lists it)
                self._tg.start_soon(self._changed, backend, method, who)
        elif method == "notifications/resources/updated" and isinstance(params.get("uri"), str):
            await self.notify_resource_updated(params["uri"])
            if self._tg is not None and params["uri"] in self.subscriptions.at_backend:
                self._tg.start_soon(self.subscriptions.updated, params["uri"])  # (never waits on the reader)
        elif method == "notifications/message":
            scope = call.scope if call is not None else None
            if scope is not None:
                level = params.get("level") if isinstance(params.get("level"), str) else "info"
                name = params.get("logger")
                await scope.log(str(level), params.get("data"), f"{backend.name}.{name}" if name else backend.name)
        elif method == "notifications/elicitation/complete" and isinstance(params.get("elicitationId"), str):
            scope = call.scope if call is not None else None
            if scope is not None:  # to a host whose era has the notice (the scope knows)
                await scope.elicitation_completed(params["elicitationId"])

    async def _changed(self, backend: Backend, method: str, principal: str | None = None) -> None:
        try:
            await self.refresh(backend.name, principal=principal)
        except BackendUnavailable:
            return
        await self._notify_everywhere(method, None)

    async def tell_hosts(self, method: str) -> None:
        """A list change of the gateway's own (a backend listed after someone signed in)."""
        await self._notify_everywhere(method, None)
