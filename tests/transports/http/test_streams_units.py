"""transports/http/streams.py and sessions.py: a request's replayable events and where the
session's messages go, without a server."""

from __future__ import annotations

import asyncio

import orjson
import pytest

from elicitkit.transports.http.sessions import STANDALONE_REPLAY_LIMIT, HTTPSession
from elicitkit.transports.http.streams import Stream, is_decided

pytestmark = pytest.mark.anyio


def test_events_replay_after_a_cursor() -> None:
    stream = Stream("r1", 7)
    assert not is_decided(stream)
    stream.push(b"a", False)
    stream.push(b"b", True)
    assert is_decided(stream) and stream.done
    assert [seq for seq, _, _ in stream.after(1)] == [2]


async def test_a_waiter_wakes_on_push_and_a_timeout_ends_the_wait() -> None:
    stream = Stream("r1", 7)
    waiting = asyncio.ensure_future(stream.wait())
    await asyncio.sleep(0)
    stream.push(b"x", False)
    await asyncio.wait_for(waiting, 1)
    await stream.wait(0.01)  # nothing happens: returns after the timeout


async def test_route_puts_responses_on_their_stream_and_the_rest_on_the_standalone_one() -> None:
    hs = HTTPSession("s")
    stream = hs.open_stream(3)
    await hs.route({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}, 3)
    await hs.route({"jsonrpc": "2.0", "method": "notifications/message", "params": {}}, None)
    await hs.route({"jsonrpc": "2.0", "id": 3, "result": {}}, None)
    assert [final for _, _, final in stream.events] == [False, True]
    assert len(hs.standalone.events) == 1


async def test_2026_answers_go_back_under_the_clients_id_with_their_status() -> None:
    hs = HTTPSession("")
    stream = hs.open_stream(hs.next_internal_id())
    stream.public_id = "client-7"
    assert stream.request_id is not None
    await hs.route({"jsonrpc": "2.0", "id": stream.request_id, "error": {"code": -32601, "message": "no"}}, None)
    assert orjson.loads(stream.events[0][1])["id"] == "client-7"
    assert stream.status == 404


async def test_the_standalone_stream_keeps_a_bounded_replay() -> None:
    hs = HTTPSession("s")
    for _ in range(STANDALONE_REPLAY_LIMIT + 5):
        await hs.route({"jsonrpc": "2.0", "method": "notifications/message", "params": {}}, None)
    assert len(hs.standalone.events) == STANDALONE_REPLAY_LIMIT


def test_close_stream_only_while_someone_listens_or_the_post_is_deciding() -> None:
    hs = HTTPSession("s")
    stream = hs.open_stream(1)
    assert hs.close_stream(1, 500)  # the POST is still choosing its answer
    assert stream.detach_retry_ms == 500
    stream.answering = False
    assert not hs.close_stream(1, 500)  # nobody listening any more
    assert not hs.close_stream(99, 500)
    hs.request_unanswered(1)
    assert stream.done and 1 not in hs.streams


async def test_a_question_keeps_its_message_and_replays_as_the_same_json() -> None:
    """A request to the client (a question, which may wait long for a person) is kept as its
    message, not its JSON; whatever reads the stream gets the JSON all the same."""
    hs = HTTPSession("s")
    stream = hs.open_stream(3)
    question = {"jsonrpc": "2.0", "id": 9, "method": "elicitation/create", "params": {"message": "Name?"}}
    await hs.route(question, 3)
    await hs.route({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}, 3)
    assert stream.events[0][1] is question
    assert type(stream.events[1][1]) is bytes
    replayed = stream.after(0)
    assert [type(payload) for _, payload, _ in replayed] == [bytes, bytes]
    assert orjson.loads(replayed[0][1]) == question
    assert [seq for seq, _, _ in replayed] == [1, 2]


async def test_a_message_that_cannot_be_encoded_fails_its_sender_and_leaves_nothing() -> None:
    hs = HTTPSession("s")
    stream = hs.open_stream(3)
    with pytest.raises(TypeError):
        await hs.route({"jsonrpc": "2.0", "id": 9, "method": "elicitation/create", "params": {"x": object()}}, 3)
    assert stream.events == [] and hs.standalone.events == []
