"""The outgoing messages of one request (or of the standalone GET stream), kept for replay.

A request's stream collects what the session sends on its behalf (progress, log lines,
questions, then the response); the endpoint writes it out as JSON or SSE, and a client whose
connection dropped resumes it from an event id.
"""

from __future__ import annotations

import asyncio

from elicitkit.protocol.jsonrpc import JSON, RequestId, encode


class Stream:
    """One request's events, replayable.

    Kept small (a parked question holds one for as long as a person takes to answer): the
    events are a list, and waiting is a future per waiter, made only while someone waits. An
    event is its JSON, or, for a question (a request to the client), the message itself: its
    params are the asking frame's own, so keeping the message costs a small dict where its
    JSON would cost half a KiB per question; it is encoded again where it is written.
    """

    __slots__ = (
        "_waiting",
        "answering",
        "delivered",
        "detach_retry_ms",
        "done",
        "events",
        "key",
        "listeners",
        "next_seq",
        "public_id",
        "request_id",
        "status",
    )

    def __init__(self, key: str, request_id: RequestId | None) -> None:
        self.key = key
        self.request_id = request_id
        self.events: list[tuple[int, bytes | JSON, bool]] = []  # (seq, json or message, is_final)
        self.next_seq = 1
        self.done = False
        self.delivered = 0  # highest seq a live listener has written out
        self.listeners = 0
        self.detach_retry_ms: int | None = None  # set: end the live connection, client resumes later
        self.public_id: RequestId | None = None  # 2026: the client's own id (the session uses its own)
        self.status = 200  # 2026: the HTTP status of a JSON answer (errors map to 400/404)
        self.answering = True  # the POST has not yet chosen between a JSON and an SSE answer
        self._waiting: asyncio.Future[None] | list[asyncio.Future[None]] | None = None

    def push(self, payload: bytes, final: bool, message: JSON | None = None) -> None:
        """One more event: ``payload``, or with ``message`` (its decoded form), that instead."""
        self.events.append((self.next_seq, payload if message is None else message, final))
        self.next_seq += 1
        if final:
            self.done = True
        self.notify()

    def end_silently(self) -> None:
        """The request ended without a response (it was cancelled): nothing more will come."""
        self.done = True
        self.notify()

    def notify(self) -> None:
        """Wake every waiter."""
        waiting, self._waiting = self._waiting, None
        if waiting is None:
            return
        if type(waiting) is list:
            for change in waiting:
                if not change.done():
                    change.set_result(None)
        elif not waiting.done():  # type: ignore[union-attr]
            waiting.set_result(None)  # type: ignore[union-attr]

    def changed(self) -> asyncio.Future[None]:
        """A future done at the next :meth:`notify`: ``await stream.changed()`` is :meth:`wait`
        without a coroutine frame, which a stream parked on a person would hold all along.

        Each waiter has a future of its own, so one being cancelled (its client went away)
        cannot cancel another's wait.
        """
        change: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        waiting = self._waiting
        if waiting is None:
            self._waiting = change  # the one waiter (the common case): no list for it
        elif type(waiting) is list:
            waiting.append(change)
        else:
            self._waiting = [waiting, change]  # type: ignore[list-item]
        return change

    async def wait(self, timeout: float | None = None) -> None:
        """Until the next :meth:`notify` (or ``timeout`` seconds): waiters re-check their condition."""
        change = self.changed()
        if timeout is None:
            await change
            return
        timer = asyncio.get_running_loop().call_later(timeout, _wake, change)
        try:
            await change
        finally:
            timer.cancel()

    def after(self, seq: int) -> list[tuple[int, bytes, bool]]:
        """The events after ``seq``, each as its JSON."""
        return [_as_json(e) for e in self.events if e[0] > seq]


# Event ids are ``<stream key>/<seq>``; a seq longer than this is no id of ours (and int() of a
# few thousand digits is refused by Python, or slow).
_MAX_SEQ_DIGITS = 18


def parse_event_id(value: str) -> tuple[str, int] | None:
    """A ``Last-Event-ID`` as this server writes them: (stream key, seq), or None if malformed.

    Strict on purpose: the seq is ASCII digits only, since ``str.isdigit()`` is also true for
    characters such as ``²`` that ``int()`` refuses.
    """
    key, slash, seq = value.partition("/")
    if not slash or not key or not seq or len(seq) > _MAX_SEQ_DIGITS or not (seq.isascii() and seq.isdigit()):
        return None
    return key, int(seq)


def is_decided(stream: Stream) -> bool:
    """A POST can choose its answer: a message came, the request ended, or close_stream() was called."""
    return bool(stream.events) or stream.done or stream.detach_retry_ms is not None


async def decided(stream: Stream) -> None:
    while not is_decided(stream):
        await stream.wait()


def _as_json(event: tuple[int, bytes | JSON, bool]) -> tuple[int, bytes, bool]:
    payload = event[1]
    if type(payload) is bytes:
        return event  # type: ignore[return-value]
    return event[0], encode(payload), event[2]  # type: ignore[arg-type]


def _wake(change: asyncio.Future[None]) -> None:
    if not change.done():
        change.set_result(None)
