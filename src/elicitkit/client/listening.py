"""Change notifications on either era behind one stream: ``async with client.listen(...) as changes``.

A 2026-07-28 server has no session to send changes on: the client opens a ``subscriptions/listen``
request, the server first acknowledges the kinds it agreed to, then tags every change with the
request's id; closing the request ends it. A 2025 server sends list changes unasked on the session
(when it declares ``listChanged``) and resource updates after ``resources/subscribe``. Both end up
as the same :class:`Changes`, so code that follows a server's lists works on any server.

Changes are level triggers ("the tool list changed; list it again"): one not yet read is not
queued twice, so a consumer that reads slowly (or never) holds at most one per kind and URI.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

from elicitkit.protocol import subscriptions as subs
from elicitkit.protocol.errors import INVALID_PARAMS, MCPError
from elicitkit.protocol.jsonrpc import JSON, RequestId
from elicitkit.runtime.latest import Latest

if TYPE_CHECKING:
    from elicitkit.client.client import Client

__all__ = ["Change", "Changes", "Listening", "wanted_filter"]

_KINDS = {
    subs.TOOLS_LIST_CHANGED: "tools",
    subs.PROMPTS_LIST_CHANGED: "prompts",
    subs.RESOURCES_LIST_CHANGED: "resources",
    subs.RESOURCE_UPDATED: "resource",
}


@dataclass(frozen=True, slots=True)
class Change:
    """One change: ``kind`` is ``"tools"``, ``"prompts"``, ``"resources"`` (a list changed) or
    ``"resource"`` (the resource at ``uri`` was updated); ``params`` is the notification's own."""

    kind: str
    uri: str | None
    params: JSON


def _change(method: str, params: JSON) -> Change | None:
    kind = _KINDS.get(method)
    if kind is None:
        return None
    uri = params.get("uri") if kind == "resource" else None
    return Change(kind, uri if isinstance(uri, str) else None, params)


class Changes:
    """An open stream of changes: ``agreed`` says what the server will send on it; iterate it.

    The iteration ends when the server ends the stream (2026) or the block is left; an error
    that ended the stream (the connection went away) is raised from it.
    """

    def __init__(self, agreed: subs.ListenFilter) -> None:
        self.agreed = agreed
        self._latest: Latest[tuple[str, str | None], Change] = Latest()

    def _put(self, change: Change) -> None:
        self._latest.put((change.kind, change.uri), change)  # a newer one replaces an unread one

    def _end(self, error: BaseException | None = None) -> None:
        self._latest.end(error)

    @property
    def ended(self) -> bool:
        return self._latest.ended

    def waiting(self) -> list[Change]:
        """The changes not read yet, oldest first."""
        return self._latest.waiting()

    def __aiter__(self) -> Changes:
        return self

    async def __anext__(self) -> Change:
        return await self._latest.take()


class Listening:
    """The client's open streams, and where its notifications find them (one per client)."""

    def __init__(self) -> None:
        self._tagged: dict[subs.SubscriptionId, Changes] = {}  # 2026: by the listen request's id
        self._untagged: list[Changes] = []  # 2025: by what each asked for
        self._acks: dict[subs.SubscriptionId, Callable[[JSON], None]] = {}
        self._subscribed: dict[str, int] = {}  # 2025: URI -> streams that want it

    def __bool__(self) -> bool:
        return bool(self._tagged or self._untagged or self._acks)

    def deliver(self, method: str, params: JSON) -> None:
        """A notification from the server: to the stream it names (2026) or the streams that want it."""
        tag = subs.subscription_of(params)
        if tag is not None:
            if method == subs.ACKNOWLEDGED:
                heard = self._acks.pop(tag, None)
                if heard is not None:
                    heard(params)
                return
            tagged = self._tagged.get(tag)
            if tagged is not None and tagged.agreed.wants(method, params):
                change = _change(method, params)
                if change is not None:
                    tagged._put(change)
            return
        for stream in self._untagged:
            if stream.agreed.wants(method, params):
                change = _change(method, params)
                if change is not None:
                    stream._put(change)

    @contextlib.asynccontextmanager
    async def open(self, client: Client, wanted: subs.ListenFilter, timeout: float | None) -> AsyncIterator[Changes]:
        """One stream for ``client``, the way its server's era has it."""
        opening = self._open_modern if client.connection.changes_come_on_streams else self._open_legacy
        async with opening(client, wanted, timeout) as changes:
            yield changes

    @contextlib.asynccontextmanager
    async def _open_modern(
        self, client: Client, wanted: subs.ListenFilter, timeout: float | None
    ) -> AsyncIterator[Changes]:
        acknowledged: list[subs.ListenFilter] = []
        heard = anyio.Event()
        failed: list[BaseException] = []
        changes: Changes | None = None
        stream_id: list[RequestId] = []

        def on_ack(params: JSON) -> None:
            try:
                acknowledged.append(subs.parse_acknowledgement(params))
            except MCPError as exc:
                failed.append(exc)
            heard.set()

        def on_started(request_id: RequestId) -> None:
            stream_id.append(request_id)
            self._acks[request_id] = on_ack

        async def hold() -> None:
            try:
                await client.connection.request(
                    subs.LISTEN, {"notifications": wanted.to_wire()}, timeout=0, on_started=on_started
                )
            except MCPError as exc:
                if changes is None:
                    failed.append(exc)
                else:
                    changes._end(exc)
            else:  # the server ended the stream gracefully
                if changes is not None:
                    changes._end()
                else:
                    failed.append(MCPError(INVALID_PARAMS, f"the server ended {subs.LISTEN} before acknowledging it"))
            heard.set()

        # A task of its own, not a task group: the caller's exceptions from inside the block must
        # reach it as they are, not wrapped in an exception group.
        holding = asyncio.ensure_future(hold())
        try:
            with anyio.fail_after(timeout):
                await heard.wait()
            if failed:
                raise failed[0]
            changes = Changes(acknowledged[0])
            self._tagged[stream_id[0]] = changes
            yield changes
        finally:
            if changes is not None:
                changes._end()
            holding.cancel()  # the request is cancelled: its stream closes
            with anyio.CancelScope(shield=True), contextlib.suppress(asyncio.CancelledError):
                await holding
            for request_id in stream_id:
                self._tagged.pop(request_id, None)
                self._acks.pop(request_id, None)

    @contextlib.asynccontextmanager
    async def _open_legacy(
        self, client: Client, wanted: subs.ListenFilter, timeout: float | None
    ) -> AsyncIterator[Changes]:
        caps = client.server_capabilities

        def says(capability: str, flag: str) -> bool:
            declared = caps.get(capability) if isinstance(caps, dict) else None
            return isinstance(declared, dict) and declared.get(flag) is True

        subscribed: list[str] = []
        try:
            if wanted.resource_subscriptions and says("resources", "subscribe"):
                for uri in wanted.resource_subscriptions:
                    if not self._subscribed.get(uri):
                        await client.connection.request("resources/subscribe", {"uri": uri}, timeout=timeout)
                    self._subscribed[uri] = self._subscribed.get(uri, 0) + 1
                    subscribed.append(uri)
            agreed = wanted.restrict(
                tools=says("tools", "listChanged"),
                prompts=says("prompts", "listChanged"),
                resources=says("resources", "listChanged"),
                resource_ok=subscribed.__contains__,
            )
            changes = Changes(agreed)
            self._untagged.append(changes)
            try:
                yield changes
            finally:
                changes._end()
                self._untagged.remove(changes)
        finally:
            with anyio.CancelScope(shield=True):
                await self._unsubscribe(client, subscribed, timeout)

    async def _unsubscribe(self, client: Client, uris: Iterable[str], timeout: float | None) -> None:
        for uri in uris:
            left = self._subscribed.get(uri, 0) - 1
            if left > 0:
                self._subscribed[uri] = left
                continue
            self._subscribed.pop(uri, None)
            with contextlib.suppress(MCPError):  # a server that is gone forgot it anyway
                await client.connection.request("resources/unsubscribe", {"uri": uri}, timeout=timeout)


def wanted_filter(*, tools: bool, prompts: bool, resources: bool, resource_uris: Iterable[str]) -> subs.ListenFilter:
    """What a caller asked for, as the wire's filter (URIs deduplicated, order kept)."""
    uris = tuple(dict.fromkeys(resource_uris))
    if not all(isinstance(uri, str) and uri for uri in uris):
        raise ValueError("resource_uris must be non-empty strings")
    return subs.ListenFilter(
        tools_list_changed=tools,
        prompts_list_changed=prompts,
        resources_list_changed=resources,
        resource_subscriptions=uris,
    )
