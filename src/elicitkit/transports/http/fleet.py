"""Streamable HTTP sessions shared by a fleet: any instance serves any session.

A legacy session lives on the instance that opened it (its *owner*). When a request names a
session this instance does not hold, the endpoint asks the backplane who owns it and relays:

- a **request**: this instance follows a new stream of the session (a key it picks), hands the
  owner the request, and answers its client from the events the owner records and sends to
  this instance's reply channel (JSON or SSE, exactly as if the session were here);
- a **response or notification** (the answer to a question, a cancel): handed to the owner, 202;
- a **GET** with ``Last-Event-ID``: the recorded events after it, then the live ones, which the
  owner is asked to publish on the stream's own channel from then on (a stream the owner
  answered itself was never recorded: the owner publishes it from memory, from that event on);
  without it, the session's standalone stream from now on;
- a **DELETE**: the owner ends the session.

On the owner, a session is a :class:`FleetSession`. A request that landed on the owner costs
nothing more than in a single process: its stream stays in memory. A stream opened for another
instance (*remote*) and the standalone stream record every event (published to whoever
follows, and kept a while for resumption); a remote stream is dropped once its last event is out.

Failure: an owner that stops its heartbeat is dead; every relay for it ends with an error, and
its sessions get 404 (clients start a new one). Losing Redis ends the relays too; on the owner,
requests whose events could no longer reach their client are cancelled, so no question waits
for an answer that cannot come.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field

from elicitkit.backplane.base import ATTACHED, DETACH, END, EVENT, FINAL, REJECT, Backplane, Event, Following
from elicitkit.protocol.errors import INTERNAL_ERROR, INVALID_REQUEST, MCPError
from elicitkit.protocol.inbound import HANDSHAKE
from elicitkit.protocol.jsonrpc import JSON, ErrorResponse, RequestId, encode
from elicitkit.telemetry import hook as telemetry
from elicitkit.transports.http.sessions import HTTPSession, SessionTable
from elicitkit.transports.http.streams import Stream

logger = logging.getLogger("elicitkit.fleet")

FOREIGN_SESSION = "this session belongs to another principal; start your own with initialize"
UNKNOWN_SESSION = "unknown or terminated session; start a new one with initialize (no Mcp-Session-Id)"
OWNER_GONE = "the server instance holding this session stopped; start a new session with initialize"
_OWNER_CACHE = 100_000  # remembered session owners (cleared when full)
_ATTACH_TIMEOUT = 5.0  # seconds an owner has to answer an attach
REDIS_GONE = "the fleet lost its shared store (Redis) during this call; try again"
REDIS_WAS_GONE = "the fleet's shared store (Redis) was unreachable during this call; try again"


# ----------------------------------------------------------------------------- the owner's side


class RecordedStream(Stream):
    """A stream of a session in a fleet: its events are recorded for other instances."""

    __slots__ = ("owner", "remote", "reply_to")

    def __init__(
        self, key: str, request_id: RequestId | None, owner: FleetSession, remote: bool, reply_to: str | None = None
    ) -> None:
        super().__init__(key, request_id)
        self.owner = owner
        self.remote = remote  # opened for another instance, which answers the client
        # The instance relaying it, which gets its live events on its reply channel; None: they
        # go to the stream's own channel (whoever subscribed: a resumption, the standalone GET).
        self.reply_to = reply_to

    def push(self, payload: bytes, final: bool, message: JSON | None = None) -> None:
        seq = self.next_seq
        super().push(payload, final, message)
        owner = self.owner
        owner.backplane.record(owner.session_id, self.key, (seq, payload, FINAL if final else EVENT), self.reply_to)
        if final and self.remote:
            owner.drop_stream(self)

    def end_silently(self) -> None:
        was_done = self.done
        super().end_silently()
        if self.remote and not was_done:
            owner = self.owner
            owner.backplane.record(owner.session_id, self.key, (self.next_seq, b"", END), self.reply_to)
            owner.drop_stream(self)


@dataclass(eq=False)
class FleetSession(HTTPSession):
    """A session owned by this instance, whose streams other instances may relay."""

    backplane: Backplane = field(default=None)  # type: ignore[assignment]  # always given

    def __post_init__(self) -> None:
        self.standalone = RecordedStream("g", None, self, False)
        self.by_key["g"] = self.standalone

    def open_stream(
        self, request_id: RequestId, key: str | None = None, remote: bool = False, reply_to: str | None = None
    ) -> Stream:
        if not remote:  # the client is here: a plain stream, nothing recorded (see Fleet._attach)
            return super().open_stream(request_id)
        assert key is not None
        stream = RecordedStream(key, request_id, self, True, reply_to)
        self.streams[request_id] = stream
        self.by_key[key] = stream
        return stream

    def close_stream(self, request_id: RequestId, retry_ms: int) -> bool:
        stream = self.streams.get(request_id)
        if isinstance(stream, RecordedStream) and stream.remote and not stream.done:
            detach = (stream.next_seq, str(retry_ms).encode(), DETACH)
            self.backplane.record(self.session_id, stream.key, detach, stream.reply_to)
            return True
        return super().close_stream(request_id, retry_ms)


# ----------------------------------------------------------------------------- a relaying instance


class _RemotePort:
    """The little of a session the endpoint asks of one it relays for."""

    __slots__ = ("protocol_version",)

    def __init__(self, protocol_version: str | None) -> None:
        self.protocol_version = protocol_version

    def cancel(self, request_id: RequestId) -> None:  # only 2026 requests are cancelled this way
        """Never called: a relayed session is a 2025-era one."""


_NO_STREAM = Stream("", None)  # a relay's "standalone stream" when it relays a request's stream


class RemoteSession:
    """One stream of a session another instance owns, as this instance relays it to its client."""

    __slots__ = ("_buffer", "attached", "fleet", "following", "owner", "session", "session_id", "standalone", "stream")

    def __init__(self, fleet: Fleet, session_id: str, owner: str, protocol_version: str | None) -> None:
        self.fleet = fleet
        self.session_id = session_id
        self.owner = owner
        self.session = _RemotePort(protocol_version)
        self.standalone = _NO_STREAM
        self.stream: Stream | None = None
        self.following: Following | None = None
        self._buffer: list[Event] | None = None  # live events that came while the history was read
        self.attached: asyncio.Future[bool] | None = None  # the owner's answer to an attach

    async def follow(self, stream: Stream, *, buffer: bool = False, direct: bool = False) -> None:
        self.stream = stream
        self._buffer = [] if buffer else None
        backplane = self.fleet.backplane
        self.following = await backplane.follow(self.session_id, stream.key, self.on_event, direct=direct)
        self.fleet.relays.add(self)
        self.fleet.backplane.watch(self.owner)

    def on_event(self, event: Event) -> None:
        stream = self.stream
        if stream is None or stream.done:
            return
        if self.attached is not None and event[2] in (ATTACHED, REJECT):
            if not self.attached.done():
                self.attached.set_result(event[2] == ATTACHED)
            return
        if self._buffer is not None and event[2] in (EVENT, FINAL):
            self._buffer.append(event)
            return
        self.apply(stream, event)

    def apply(self, stream: Stream, event: Event) -> None:
        seq, payload, kind = event
        if kind in (EVENT, FINAL):
            if seq < stream.next_seq:
                return  # seen already (history and live overlap)
            stream.next_seq = seq
            stream.push(payload, kind == FINAL)
        elif kind == END:
            stream.end_silently()
        elif kind == DETACH:
            stream.detach_retry_ms = int(payload or b"0")
            stream.notify()
        elif kind == REJECT:
            stream.status = seq
            stream.push(payload, True)
        else:  # "lost": the backplane lost Redis
            self.fail(REDIS_GONE)

    def flush(self, history: Iterable[Event]) -> None:
        """The recorded events after the cursor, then what came live meanwhile, in order."""
        stream = self.stream
        assert stream is not None
        buffered, self._buffer = self._buffer or [], None
        for event in [*history, *buffered]:
            if stream.done:
                break
            self.apply(stream, event)

    def fail(self, why: str) -> None:
        """End the relayed stream: its request gets an error (or a standalone stream just ends)."""
        stream = self.stream
        if stream is None or stream.done:
            return
        if stream.request_id is not None:
            error = MCPError(INTERNAL_ERROR, why, {"sessionLost": self.session_id})
            stream.push(encode(ErrorResponse(stream.request_id, error).to_wire()), True)
        else:
            stream.end_silently()

    def drop_stream(self, stream: Stream) -> None:
        """The endpoint is done with the stream: stop following it."""
        following, self.following = self.following, None
        if following is not None:
            following.close()
            self.fleet.relays.discard(self)
            self.fleet.backplane.unwatch(self.owner)


# ----------------------------------------------------------------------------- the glue


class Fleet:
    """An endpoint's part in a fleet: its inbox (the owner's side) and its relays."""

    def __init__(self, backplane: Backplane, table: SessionTable) -> None:
        self.backplane = backplane
        self.table = table
        self.relays: set[RemoteSession] = set()
        self._keys = itertools.count(1)
        self._owners: dict[str, str] = {}  # session -> owner, as last looked up (an owner never changes)
        backplane.attach(self)
        if backplane.shared:
            table.make_session = self._make_session
            table.on_open = self._opened
            table.on_end = self._ended

    def _make_session(self, session_id: str) -> HTTPSession:
        return FleetSession(session_id, backplane=self.backplane)

    async def _opened(self, hs: HTTPSession) -> None:
        try:
            await self.backplane.claim(hs.session_id)
        except Exception as exc:  # Redis down: the session works here; the heartbeat registers it later
            logger.warning("could not register session %s in the fleet: %s", hs.session_id[:8], exc)

    def _ended(self, hs: HTTPSession) -> None:
        self.backplane.release(hs.session_id)

    # -- the inbox: what other instances send this one ----------------------------------

    async def receive(self, message: JSON) -> None:
        kind, session_id = message.get("k"), message.get("sid")
        if not isinstance(session_id, str):
            return
        if kind == "req":
            reply_to = message.get("reply")
            reply = reply_to if isinstance(reply_to, str) else None
            await self._request(session_id, message.get("key"), message.get("body"), reply, message.get("who"))
        elif kind == "feed":
            hs = self.table.get(session_id)
            if hs is not None and isinstance(message.get("body"), dict):
                if hs.principal != message.get("who"):  # an answer or a cancel from someone else
                    logger.warning("dropped a relayed message for session %s: another principal", session_id[:8])
                    return
                await hs.session.feed(message["body"])
        elif kind == "del":
            hs = self.table.get(session_id)
            if hs is not None and hs.principal != message.get("who"):
                logger.warning("refused a relayed DELETE of session %s: another principal", session_id[:8])
                return
            hs = self.table.pop(session_id)
            if hs is not None:
                hs.closed.set()
        elif kind == "note" and isinstance(message.get("body"), dict):
            await self.deliver(session_id, message["body"])
        elif kind == "who":  # may this principal follow the session's streams?
            hs = self.table.get(session_id)
            key, reply_to = message.get("key"), message.get("reply")
            if isinstance(key, str) and isinstance(reply_to, str):
                ok = hs is not None and hs.principal == message.get("who")
                self.backplane.record(session_id, key, (0 if ok else 403, b"", ATTACHED if ok else REJECT), reply_to)
        elif kind == "attach":
            self._attach(session_id, message.get("key"), message.get("after"), message.get("who"))

    def _attach(self, session_id: str, key: object, after: object, who: object = None) -> None:
        """Another instance resumes a stream this one answered itself: publish it from ``after`` on."""
        if not isinstance(key, str) or not isinstance(after, int):
            return
        hs = self.table.get(session_id)
        stream = hs.by_key.get(key) if hs is not None and hs.principal == who else None
        if hs is None or stream is None:
            self.backplane.record(session_id, key, (404, b"", REJECT))
            return
        self.backplane.record(session_id, key, (0, b"", ATTACHED))
        if isinstance(stream, RecordedStream):  # recorded already: from now on, to its subscribers
            stream.reply_to = None  # its relaying instance is gone (or its client left it)
            for seq, payload, final in stream.after(after):
                self.backplane.record(session_id, key, (seq, payload, FINAL if final else EVENT))
            return
        tg = self.table._tg
        if tg is not None:
            tg.start_soon(self._mirror, session_id, stream, after, name="elicitkit.fleet.mirror")

    async def _mirror(self, session_id: str, stream: Stream, cursor: int) -> None:
        """Publish a plain stream's events from ``cursor`` until its end (an attached resumption)."""
        record = self.backplane.record
        stream.listeners += 1
        try:
            while True:
                for seq, payload, final in stream.after(cursor):
                    record(session_id, stream.key, (seq, payload, FINAL if final else EVENT))
                    cursor = seq
                    if final:
                        return
                if stream.done:
                    record(session_id, stream.key, (stream.next_seq, b"", END))
                    return
                await stream.wait()
        finally:
            stream.listeners -= 1

    async def _request(
        self, session_id: str, key: object, body: object, reply_to: str | None, who: object = None
    ) -> None:
        if not isinstance(key, str) or not isinstance(body, dict):
            return
        hs = self.table.get(session_id)
        request_id = body.get("id")
        if not isinstance(hs, FleetSession):
            error = ErrorResponse(request_id, MCPError(INVALID_REQUEST, self.table.missing_reason(session_id)))
            self.backplane.record(session_id, key, (404, encode(error.to_wire()), REJECT), reply_to)
            return
        if hs.principal != who:  # the relaying instance's gate verified ``who``; the message is signed
            error = ErrorResponse(request_id, MCPError(INVALID_REQUEST, FOREIGN_SESSION))
            self.backplane.record(session_id, key, (403, encode(error.to_wire()), REJECT), reply_to)
            return
        if request_id in hs.streams:
            error = ErrorResponse(request_id, MCPError(INVALID_REQUEST, f"request id {request_id!r} is already in use"))
            self.backplane.record(session_id, key, (400, encode(error.to_wire()), REJECT), reply_to)
            return
        hs.open_stream(request_id, key, remote=True, reply_to=reply_to)  # type: ignore[arg-type]
        await hs.session.feed(body, HANDSHAKE)

    async def deliver(self, session_id: str, message: JSON) -> bool:
        hs = self.table.sessions.get(session_id)
        if hs is None:
            return False
        await hs.route(message, None)
        return True

    def lost_contact(self) -> None:
        """Redis is gone: end every call in flight here with an error.

        Its question's answer may be posted to any instance, and none can reach this one now: a
        call left waiting would wait forever. Streams relayed elsewhere cannot reach their
        client at all. Sessions themselves go on; new calls work once Redis is back.
        """
        self._end_calls(REDIS_GONE)

    def regained_contact(self) -> None:
        """Redis is back: end the calls that started while it was away and still run.

        An answer to their questions that landed on another instance was refused (503, or 404
        until the session was registered again) and is lost: the server cannot tell, so such a
        call would wait for it until its timeout. Ending them bounds the outage's effect.
        """
        self._end_calls(REDIS_WAS_GONE)

    def _end_calls(self, why: str) -> None:
        for hs in list(self.table.sessions.values()):
            for stream in list(hs.streams.values()):
                if stream.done or stream.request_id is None:
                    continue
                error = MCPError(INTERNAL_ERROR, why)
                stream.push(encode(ErrorResponse(stream.request_id, error).to_wire()), True)
                hs.session.cancel(stream.request_id)

    def owners_gone(self, owners: Iterable[str]) -> None:
        dead = set(owners)
        self._owners = {sid: owner for sid, owner in self._owners.items() if owner not in dead}
        for relay in list(self.relays):
            if relay.owner in dead:
                relay.fail(OWNER_GONE)

    # -- relaying: what the endpoint does for a session it does not hold -------------------

    async def _owner(self, session_id: str, *, cached: bool = True) -> str | None:
        """The session's owner. ``cached``: as last seen, for a message whose delivery itself
        shows whether the owner still listens (a dead owner's inbox has no subscriber)."""
        owner = self._owners.get(session_id) if cached else None
        if owner is None:
            owner = await self.backplane.owner(session_id)
            if owner is None or owner == self.backplane.instance_id:
                return None
            if len(self._owners) >= _OWNER_CACHE:
                self._owners.clear()
            self._owners[session_id] = owner
        return owner

    async def forward_request(
        self, session_id: str, protocol_version: str | None, body: JSON, request_id: RequestId, who: str | None = None
    ) -> tuple[RemoteSession, Stream] | int:
        """Relay a request to the session's owner: the stream to answer from, or an HTTP status."""
        try:
            owner = await self._owner(session_id)
            if owner is None:
                return 404
            relay = RemoteSession(self, session_id, owner, protocol_version)
            instance = self.backplane.instance_id
            stream = Stream(f"{instance}.{next(self._keys)}", request_id)
            await relay.follow(stream, direct=True)  # its events come on this instance's reply channel
            tel = telemetry.current
            if tel is not None:  # a hop of its own; its context rides in the request's params._meta
                span, body = tel.relay_start("request", body)
            try:
                message = {
                    "k": "req",
                    "sid": session_id,
                    "key": stream.key,
                    "body": body,
                    "reply": instance,
                    "who": who,
                }
                sent = await self.backplane.send(owner, message)
            except BaseException:
                relay.drop_stream(stream)
                if tel is not None:
                    tel.relay_end(span, 503)
                raise
            if tel is not None:
                tel.relay_end(span, None if sent else 404)
        except Exception as exc:
            logger.warning("could not relay a request for session %s: %s", session_id[:8], exc)
            return 503
        if not sent:  # the owner is not listening: gone
            relay.drop_stream(stream)
            self._owners.pop(session_id, None)
            return 404
        return relay, stream

    async def forward_other(self, session_id: str, body: JSON, who: str | None = None) -> int:
        """Relay a response or notification; the HTTP status to answer with."""
        try:
            owner = await self._owner(session_id)
            if owner is None:
                return 404
            tel = telemetry.current
            if tel is not None:
                span, body = tel.relay_start("message", body)
            sent = await self.backplane.send(owner, {"k": "feed", "sid": session_id, "body": body, "who": who})
            if tel is not None:
                tel.relay_end(span, None if sent else 404)
        except Exception as exc:
            logger.warning("could not relay a message for session %s: %s", session_id[:8], exc)
            return 503
        if not sent:
            self._owners.pop(session_id, None)
        return 202 if sent else 404

    async def forward_delete(self, session_id: str, who: str | None = None) -> int:
        try:
            owner = await self._owner(session_id)
            if owner is None:
                return 404
            sent = await self.backplane.send(owner, {"k": "del", "sid": session_id, "who": who})
        except Exception as exc:
            logger.warning("could not relay a DELETE for session %s: %s", session_id[:8], exc)
            return 503
        self._owners.pop(session_id, None)
        return 200 if sent else 404

    async def open_stream(
        self, session_id: str, protocol_version: str | None, key: str, cursor: int | None, who: str | None = None
    ) -> tuple[RemoteSession, Stream] | int:
        """A GET: resume stream ``key`` after ``cursor`` (None: the standalone stream from now on).

        With a principal (a bearer gate in front), the owner is asked first whether the session is
        that principal's: the streams are read from the backplane, which knows no owners."""
        try:
            owner = await self._owner(session_id, cached=False)  # nothing is sent: ask who is alive
            if owner is None:
                return 404
            if who is not None and not await self._owner_accepts(session_id, owner, protocol_version, who):
                return 403
            relay = RemoteSession(self, session_id, owner, protocol_version)
            stream = Stream(key, None)
            if cursor is None:
                relay.standalone = stream
                await relay.follow(stream)
                return relay, stream
            stream.next_seq = cursor + 1
            await relay.follow(stream, buffer=True)
            try:
                history = await self.backplane.replay(session_id, key, cursor)
                if not _ended(history) and not await self._ask_owner(relay, owner, key, cursor, who):
                    # the owner no longer has it: it may have ended meanwhile (its end is recorded)
                    history = await self.backplane.replay(session_id, key, cursor) if history is not None else None
                    if not _ended(history):
                        relay.drop_stream(stream)
                        return 404
            except BaseException:
                relay.drop_stream(stream)
                raise
        except Exception as exc:
            logger.warning("could not open a stream of session %s: %s", session_id[:8], exc)
            return 503
        if key == "g":
            relay.standalone = stream
        relay.flush(history or ())
        return relay, stream

    async def _owner_accepts(self, session_id: str, owner: str, protocol_version: str | None, who: str) -> bool:
        """The owner says the session belongs to ``who`` (False: another principal's, gone, or no answer in time)."""
        probe = RemoteSession(self, session_id, owner, protocol_version)
        instance = self.backplane.instance_id
        stream = Stream(f"{instance}.{next(self._keys)}", None)
        await probe.follow(stream, direct=True)
        probe.attached = asyncio.get_running_loop().create_future()
        try:
            message = {"k": "who", "sid": session_id, "key": stream.key, "who": who, "reply": instance}
            if not await self.backplane.send(owner, message):
                return False
            return await asyncio.wait_for(probe.attached, _ATTACH_TIMEOUT)
        except TimeoutError:
            return False
        finally:
            probe.drop_stream(stream)

    async def recorded(self, session_id: str, key: str, cursor: int) -> Stream | None:
        """On the owner: a finished stream another instance relayed (dropped from memory at its
        end), from its recorded events after ``cursor``; None if none is recorded, or it has not ended."""
        try:
            history = await self.backplane.replay(session_id, key, cursor)
        except Exception as exc:
            logger.warning("could not read the recorded stream of session %s: %s", session_id[:8], exc)
            return None
        if not _ended(history):
            return None
        stream = Stream(key, None)
        stream.next_seq = cursor + 1
        for seq, payload, kind in history or ():
            if kind in (EVENT, FINAL) and seq >= stream.next_seq:
                stream.next_seq = seq
                stream.push(payload, kind == FINAL)
            elif kind in (END, REJECT):
                stream.end_silently()
        return stream

    async def _ask_owner(self, relay: RemoteSession, owner: str, key: str, cursor: int, who: str | None) -> bool:
        """Ask the owner to publish the stream from ``cursor`` on its channel: nothing was recorded
        under ``key`` (the owner answered it itself), or its live events went to the instance
        that relayed it until now. False: the owner has no such stream (or did not answer in time)."""
        relay.attached = asyncio.get_running_loop().create_future()
        message = {"k": "attach", "sid": relay.session_id, "key": key, "after": cursor, "who": who}
        if not await self.backplane.send(owner, message):
            return False
        try:
            return await asyncio.wait_for(relay.attached, _ATTACH_TIMEOUT)
        except TimeoutError:
            return False


def _ended(history: list[Event] | None) -> bool:
    """The recorded events end the stream: a resumption needs nothing live from the owner."""
    return bool(history) and history[-1][2] in (FINAL, END, REJECT)  # type: ignore[index]
