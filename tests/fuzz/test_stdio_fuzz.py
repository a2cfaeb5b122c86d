"""A real stdio server under random and mutated frames: it answers what it should, and lives on.

After every input a ``ping`` must be answered; every reply must be well-formed JSON-RPC and an
error must carry a protocol code, never -32603 (an internal error is a defect leaking out).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from ._budget import fuzz_settings
from ._strategies import json_values, messages, mutated
from ._wire import StdioPeer, check_reply, stdio_server

pytestmark = [pytest.mark.timeout(300)]

VALID_FRAMES = [
    {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"text": "hi"}}},
    {"jsonrpc": "2.0", "id": "c", "method": "completion/complete",
     "params": {"ref": {"type": "ref/prompt", "name": "greet"}, "argument": {"name": "name", "value": "A"}}},
    {"jsonrpc": "2.0", "id": 2, "method": "prompts/get", "params": {"name": "greet", "arguments": {"name": "x"}}},
    {"jsonrpc": "2.0", "id": 3, "method": "resources/read", "params": {"uri": "users://7/profile"}},
    {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
]  # fmt: skip


@pytest.fixture(scope="module")
def peer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioPeer]:
    log: Path = tmp_path_factory.mktemp("fuzz-stdio") / "stderr.txt"
    with log.open("wb") as stderr, stdio_server(stderr) as server:
        yield server
    logged = log.read_text(errors="replace")
    assert "handler for" not in logged, logged[-4000:]  # a handler that failed: -32603 went out


def frames() -> st.SearchStrategy[bytes]:
    one_line = st.one_of(
        messages().map(orjson.dumps),
        json_values.map(orjson.dumps),
        st.sampled_from(VALID_FRAMES).map(orjson.dumps).flatmap(mutated),
        st.binary(max_size=80),
    )
    return one_line.map(lambda b: b.replace(b"\n", b" ").replace(b"\r", b" ") + b"\n")


@fuzz_settings(150)
@given(st.lists(frames(), min_size=1, max_size=4))
def test_stdio_server_answers_and_survives_any_frames(peer: StdioPeer, batch: list[bytes]) -> None:
    peer.write(b"".join(batch))
    for reply in peer.ping():
        event(check_reply(reply))


@fuzz_settings(40)
@given(st.integers(0, 3), st.sampled_from([b"{", b"[", b'"', b"\xff", b" "]))
def test_stdio_server_survives_split_and_oversized_frames(peer: StdioPeer, kind: int, filler: bytes) -> None:
    if kind == 0:  # a frame cut by the buffer boundary, then completed
        frame = orjson.dumps(VALID_FRAMES[0])
        peer.write(frame[:7])
        peer.write(frame[7:] + b"\n")
    elif kind == 1:  # deep nesting
        peer.write(b'{"jsonrpc":"2.0","id":9,"method":"ping","params":' + b'{"a":' * 2000 + b"1" + b"}" * 2001 + b"\n")
    elif kind == 2:  # a long line of one byte
        peer.write(filler * 100_000 + b"\n")
    else:  # NUL and control bytes around a valid frame
        peer.write(b"\x00\x01" + orjson.dumps(VALID_FRAMES[2]) + b"\x00\n")
    replies: list[Any] = peer.ping()
    for reply in replies:
        event(check_reply(reply))
