"""Byte framing without I/O: newline-delimited JSON (stdio) and Server-Sent Events (HTTP).

Both are push parsers: feed whatever bytes arrived, get back complete frames. Oversized frames
are reported, then skipped up to their end, so one bad message never wedges the stream.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Oversized:
    """A frame longer than the limit; its bytes were discarded.

    ``size`` counts the frame's content, without its ``\n`` or a trailing ``\r``, so it is the
    same however the bytes happened to be chunked.
    """

    size: int


class LineFramer:
    """Splits a byte stream into ``\\n``-terminated frames (a trailing ``\\r`` is dropped)."""

    __slots__ = ("_buf", "_discarded", "_discarded_cr", "_discarding", "max_bytes")

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._buf = bytearray()
        self._discarding = False
        self._discarded = 0
        self._discarded_cr = False  # the last discarded byte was \r (it may end the frame)

    def feed(self, data: bytes) -> list[bytes | Oversized]:
        out: list[bytes | Oversized] = []
        start = 0
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                rest = data[start:]
                if self._discarding:
                    if rest:
                        self._discarded += len(rest)
                        self._discarded_cr = rest.endswith(b"\r")
                elif len(self._buf) + len(rest) > self.max_bytes + 1:  # +1: a trailing \r is not content
                    self._discarding = True
                    self._discarded = len(self._buf) + len(rest)
                    self._discarded_cr = (rest or self._buf).endswith(b"\r")
                    self._buf.clear()
                else:
                    self._buf += rest
                return out
            chunk = data[start:nl]
            start = nl + 1
            if self._discarding:
                ends_cr = chunk.endswith(b"\r") if chunk else self._discarded_cr
                out.append(Oversized(self._discarded + len(chunk) - ends_cr))
                self._discarding = False
                self._discarded = 0
                continue
            if self._buf:
                self._buf += chunk
                line = bytes(self._buf)
                self._buf.clear()
            else:
                line = chunk
            if line.endswith(b"\r"):
                line = line[:-1]
            if len(line) > self.max_bytes:
                out.append(Oversized(len(line)))
            elif line.strip():
                out.append(line)

    def eof(self) -> list[bytes | Oversized]:
        """Flush a last frame that had no newline, under the same limit and ``\r`` rule."""
        if self._discarding:
            self._discarding = False
            size, self._discarded = self._discarded - self._discarded_cr, 0
            return [Oversized(size)]
        line = bytes(self._buf)
        self._buf.clear()
        if line.endswith(b"\r"):
            line = line[:-1]
        if len(line) > self.max_bytes:
            return [Oversized(len(line))]
        return [line] if line.strip() else []


@dataclass(slots=True)
class SSEEvent:
    """One dispatched Server-Sent Event."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


@dataclass(slots=True)
class SSEParser:
    """The WHATWG event-stream parser: comments ignored, multi-line data joined, ``retry`` kept.

    Events with empty data are still returned (a priming event carries only an id); callers
    skip them when looking for messages but keep their id for ``Last-Event-ID``.
    """

    last_event_id: str | None = None
    retry: int | None = None
    _buf: bytearray = field(default_factory=bytearray)
    _data: list[str] = field(default_factory=list)
    _event: str = ""
    _id_seen: bool = False
    _pending_retry: int | None = None
    _skip_lf: bool = False  # the previous chunk ended in \r: a \n starting this one belongs to it

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        if self._skip_lf and chunk.startswith(b"\n"):
            chunk = chunk[1:]
        self._skip_lf = False
        self._buf += chunk
        events: list[SSEEvent] = []
        while True:
            idx = self._find_eol()
            if idx is None:
                return events
            end, skip = idx
            line = self._buf[:end].decode("utf-8", errors="replace")
            del self._buf[: end + skip]
            event = self._line(line)
            if event is not None:
                events.append(event)

    def _find_eol(self) -> tuple[int, int] | None:
        buf = self._buf
        n = buf.find(b"\n")
        r = buf.find(b"\r")
        if r >= 0 and (n < 0 or r < n):
            if r + 1 == len(buf):
                self._skip_lf = True  # a \r\n may be split across chunks
                return (r, 1)
            return (r, 2 if buf[r + 1 : r + 2] == b"\n" else 1)
        if n >= 0:
            return (n, 1)
        return None

    def _line(self, line: str) -> SSEEvent | None:
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            return None
        name, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self.last_event_id = value
                self._id_seen = True
        elif name == "retry" and value.isascii() and value.isdigit():  # "\u00b2".isdigit() is true too
            self.retry = int(value)
            self._pending_retry = self.retry
        return None

    def _dispatch(self) -> SSEEvent | None:
        if not self._data and not self._id_seen and self._pending_retry is None:
            self._event = ""
            return None
        event = SSEEvent(
            data="\n".join(self._data),
            event=self._event or "message",
            id=self.last_event_id if self._id_seen else None,
            retry=self._pending_retry,
        )
        self._data = []
        self._event = ""
        self._id_seen = False
        self._pending_retry = None
        return event


def sse_event(
    data: str | bytes, *, event_id: str | None = None, retry: int | None = None, event: str | None = None
) -> bytes:
    """Encode one SSE event (``data`` must not contain raw newlines; compact JSON never does)."""
    parts: list[bytes] = []
    if event is not None:
        parts.append(b"event: " + event.encode() + b"\n")
    if event_id is not None:
        parts.append(b"id: " + event_id.encode() + b"\n")
    if retry is not None:
        parts.append(b"retry: " + str(retry).encode() + b"\n")
    payload = data.encode() if isinstance(data, str) else data
    parts.append(b"data: " + payload + b"\n\n")
    return b"".join(parts)
