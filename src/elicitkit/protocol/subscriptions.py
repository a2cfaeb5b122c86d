"""``subscriptions/listen`` (SEP-2575) without I/O: the filter, the acknowledgement, the tags.

On 2026-07-28 a client that wants change notifications opens a long-lived ``subscriptions/listen``
request saying which kinds it wants; the server first acknowledges with the subset it will honor,
then sends only those, each tagged with the listen request's id in
``_meta["io.modelcontextprotocol/subscriptionId"]``; a graceful end is the listen request's own
response. The Tasks extension adds ``taskIds`` to the filter for ``notifications/tasks``.
The stream itself (SSE or stdio) belongs to the transports; this module only decides what goes on it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from elicitkit.protocol.errors import INVALID_PARAMS, MCPError

LISTEN: Final = "subscriptions/listen"
ACKNOWLEDGED: Final = "notifications/subscriptions/acknowledged"
SUBSCRIPTION_ID_META: Final = "io.modelcontextprotocol/subscriptionId"

TOOLS_LIST_CHANGED: Final = "notifications/tools/list_changed"
PROMPTS_LIST_CHANGED: Final = "notifications/prompts/list_changed"
RESOURCES_LIST_CHANGED: Final = "notifications/resources/list_changed"
RESOURCE_UPDATED: Final = "notifications/resources/updated"
TASK_STATUS: Final = "notifications/tasks"

SubscriptionId = str | int


@dataclass(frozen=True, slots=True)
class ListenFilter:
    """What one listen stream carries. Everything is opt-in: the default carries nothing."""

    tools_list_changed: bool = False
    prompts_list_changed: bool = False
    resources_list_changed: bool = False
    resource_subscriptions: tuple[str, ...] = ()
    task_ids: tuple[str, ...] = ()

    def to_wire(self) -> dict[str, Any]:
        """The ``notifications`` object: only the kinds asked for (or agreed to)."""
        out: dict[str, Any] = {}
        if self.tools_list_changed:
            out["toolsListChanged"] = True
        if self.prompts_list_changed:
            out["promptsListChanged"] = True
        if self.resources_list_changed:
            out["resourcesListChanged"] = True
        if self.resource_subscriptions:
            out["resourceSubscriptions"] = list(self.resource_subscriptions)
        if self.task_ids:
            out["taskIds"] = list(self.task_ids)
        return out

    def wants(self, method: str, params: dict[str, Any] | None = None) -> bool:
        """Whether a notification belongs on this stream (a kind not asked for never does)."""
        if method == TOOLS_LIST_CHANGED:
            return self.tools_list_changed
        if method == PROMPTS_LIST_CHANGED:
            return self.prompts_list_changed
        if method == RESOURCES_LIST_CHANGED:
            return self.resources_list_changed
        if method == RESOURCE_UPDATED:
            return (params or {}).get("uri") in self.resource_subscriptions
        if method == TASK_STATUS:
            return (params or {}).get("taskId") in self.task_ids
        return False

    def restrict(
        self,
        *,
        tools: bool = False,
        prompts: bool = False,
        resources: bool = False,
        resource_ok: Callable[[str], bool] | None = None,
        task_ok: Callable[[str], bool] | None = None,
    ) -> ListenFilter:
        """The subset a server agrees to: kinds it supports, URIs and task ids it lets this client see."""
        return ListenFilter(
            tools_list_changed=self.tools_list_changed and tools,
            prompts_list_changed=self.prompts_list_changed and prompts,
            resources_list_changed=self.resources_list_changed and resources,
            resource_subscriptions=tuple(u for u in self.resource_subscriptions if resource_ok and resource_ok(u)),
            task_ids=tuple(t for t in self.task_ids if task_ok and task_ok(t)),
        )


def _flag(notifications: dict[str, Any], name: str) -> bool:
    value = notifications.get(name, False)
    if not isinstance(value, bool):
        raise MCPError(INVALID_PARAMS, f"{LISTEN}: notifications.{name} must be true or false")
    return value


def _strings(notifications: dict[str, Any], name: str) -> tuple[str, ...]:
    value = notifications.get(name)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise MCPError(INVALID_PARAMS, f"{LISTEN}: notifications.{name} must be a list of non-empty strings")
    return tuple(dict.fromkeys(value))  # duplicates dropped, order kept


def parse_listen(params: Any) -> ListenFilter:
    """The filter of a ``subscriptions/listen`` request; -32602 when it is malformed.

    Unknown filter fields are ignored (a newer client may ask for kinds we do not know yet).
    """
    if not isinstance(params, dict):
        raise MCPError(INVALID_PARAMS, f"{LISTEN}: params must be an object")
    notifications = params.get("notifications")
    if not isinstance(notifications, dict):
        raise MCPError(INVALID_PARAMS, f"{LISTEN}: params.notifications must be an object")
    return ListenFilter(
        tools_list_changed=_flag(notifications, "toolsListChanged"),
        prompts_list_changed=_flag(notifications, "promptsListChanged"),
        resources_list_changed=_flag(notifications, "resourcesListChanged"),
        resource_subscriptions=_strings(notifications, "resourceSubscriptions"),
        task_ids=_strings(notifications, "taskIds"),
    )


def acknowledgement(subscription_id: SubscriptionId, accepted: ListenFilter) -> dict[str, Any]:
    """The first message of a stream: the kinds the server agreed to, tagged with the stream."""
    return {
        "jsonrpc": "2.0",
        "method": ACKNOWLEDGED,
        "params": {"_meta": {SUBSCRIPTION_ID_META: subscription_id}, "notifications": accepted.to_wire()},
    }


def tagged(method: str, params: dict[str, Any] | None, subscription_id: SubscriptionId) -> dict[str, Any]:
    """A notification as it goes on a stream: ``_meta`` carries the stream's id (params not mutated)."""
    body = dict(params or {})
    meta = body.get("_meta")
    body["_meta"] = {**(meta if isinstance(meta, dict) else {}), SUBSCRIPTION_ID_META: subscription_id}
    return {"jsonrpc": "2.0", "method": method, "params": body}


def closed(subscription_id: SubscriptionId) -> dict[str, Any]:
    """The listen request's result when the server ends the stream gracefully (e.g. on shutdown)."""
    return {"resultType": "complete", "_meta": {SUBSCRIPTION_ID_META: subscription_id}}


def subscription_of(params: dict[str, Any] | None) -> SubscriptionId | None:
    """The stream a notification was sent on (its ``_meta`` tag), or None for one sent unasked."""
    meta = params.get("_meta") if isinstance(params, dict) else None
    found = meta.get(SUBSCRIPTION_ID_META) if isinstance(meta, dict) else None
    return found if isinstance(found, (str, int)) and not isinstance(found, bool) else None


def parse_acknowledgement(params: dict[str, Any] | None) -> ListenFilter:
    """What a server agreed to send on a stream (its first message); -32602 when malformed."""
    try:
        return parse_listen(params)
    except MCPError as exc:
        raise MCPError(INVALID_PARAMS, exc.message.replace(LISTEN, ACKNOWLEDGED, 1)) from None
