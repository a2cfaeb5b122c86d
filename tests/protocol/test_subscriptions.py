"""``subscriptions/listen`` without I/O: the filter, what a stream carries, the ack and the tags."""

from __future__ import annotations

from typing import Any

import pytest

from elicitkit.protocol import subscriptions as s
from elicitkit.protocol.errors import INVALID_PARAMS, MCPError


def test_parse_listen_reads_every_kind() -> None:
    wanted = s.parse_listen(
        {
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"},
            "notifications": {
                "toolsListChanged": True,
                "promptsListChanged": False,
                "resourcesListChanged": True,
                "resourceSubscriptions": ["file:///a", "file:///b", "file:///a"],
                "taskIds": ["t1"],
                "somethingNewer": {"x": 1},  # unknown kinds are ignored
            },
        }
    )
    assert wanted == s.ListenFilter(
        tools_list_changed=True,
        resources_list_changed=True,
        resource_subscriptions=("file:///a", "file:///b"),
        task_ids=("t1",),
    )


def test_an_empty_filter_carries_nothing() -> None:
    nothing = s.parse_listen({"notifications": {}})
    assert nothing == s.ListenFilter()
    assert nothing.to_wire() == {}
    for method in (s.TOOLS_LIST_CHANGED, s.PROMPTS_LIST_CHANGED, s.RESOURCES_LIST_CHANGED, s.RESOURCE_UPDATED):
        assert not nothing.wants(method, {"uri": "file:///a"})
    assert not nothing.wants(s.TASK_STATUS, {"taskId": "t1"})


@pytest.mark.parametrize(
    "params",
    [
        None,
        [],
        {},
        {"notifications": None},
        {"notifications": []},
        {"notifications": {"toolsListChanged": "yes"}},
        {"notifications": {"promptsListChanged": 1}},
        {"notifications": {"resourceSubscriptions": "file:///a"}},
        {"notifications": {"resourceSubscriptions": [1]}},
        {"notifications": {"taskIds": [""]}},
        {"notifications": {"taskIds": "t1"}},
    ],
)
def test_malformed_filters_are_invalid_params(params: Any) -> None:
    with pytest.raises(MCPError) as info:
        s.parse_listen(params)
    assert info.value.code == INVALID_PARAMS


def test_wants_honors_the_filter_exactly() -> None:
    prompts_only = s.ListenFilter(prompts_list_changed=True)
    assert prompts_only.wants(s.PROMPTS_LIST_CHANGED)
    assert not prompts_only.wants(s.TOOLS_LIST_CHANGED)  # the suite's "honors filter" check
    some = s.ListenFilter(resource_subscriptions=("file:///a",), task_ids=("t1",))
    assert some.wants(s.RESOURCE_UPDATED, {"uri": "file:///a"})
    assert not some.wants(s.RESOURCE_UPDATED, {"uri": "file:///b"})
    assert some.wants(s.TASK_STATUS, {"taskId": "t1", "status": "working"})
    assert not some.wants(s.TASK_STATUS, {"taskId": "t2"})
    assert not some.wants("notifications/message", {"level": "info"})
    assert not some.wants(s.RESOURCE_UPDATED)


def test_restrict_keeps_only_what_the_server_supports_and_allows() -> None:
    asked = s.ListenFilter(True, True, True, ("file:///a", "file:///secret"), ("mine", "theirs"))
    agreed = asked.restrict(tools=True, resource_ok=lambda uri: "secret" not in uri, task_ok=lambda t: t == "mine")
    assert agreed == s.ListenFilter(tools_list_changed=True, resource_subscriptions=("file:///a",), task_ids=("mine",))
    assert asked.restrict() == s.ListenFilter()


def test_acknowledgement_is_tagged_and_lists_the_agreed_kinds() -> None:
    ack = s.acknowledgement(7, s.ListenFilter(tools_list_changed=True, task_ids=("t1",)))
    assert ack == {
        "jsonrpc": "2.0",
        "method": "notifications/subscriptions/acknowledged",
        "params": {
            "_meta": {"io.modelcontextprotocol/subscriptionId": 7},
            "notifications": {"toolsListChanged": True, "taskIds": ["t1"]},
        },
    }


def test_tagged_adds_the_stream_id_without_touching_the_params() -> None:
    params = {"uri": "file:///a", "_meta": {"other": 1}}
    message = s.tagged(s.RESOURCE_UPDATED, params, "sub-1")
    assert message["params"] == {"uri": "file:///a", "_meta": {"other": 1, s.SUBSCRIPTION_ID_META: "sub-1"}}
    assert params == {"uri": "file:///a", "_meta": {"other": 1}}
    bare = s.tagged(s.TOOLS_LIST_CHANGED, None, 3)
    assert bare == {"jsonrpc": "2.0", "method": s.TOOLS_LIST_CHANGED, "params": {"_meta": {s.SUBSCRIPTION_ID_META: 3}}}


def test_closed_result() -> None:
    assert s.closed(1) == {"resultType": "complete", "_meta": {"io.modelcontextprotocol/subscriptionId": 1}}


def test_filter_round_trips_through_the_wire_form() -> None:
    wanted = s.ListenFilter(True, False, True, ("u",), ("t",))
    assert s.parse_listen({"notifications": wanted.to_wire()}) == wanted
