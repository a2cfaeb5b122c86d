"""What one gateway instance reads from another over Redis (:mod:`elicitkit.gateway.fleet`):
any blob opens to a message or to None; any step reply becomes a question, the call's end, or
an MCPError; any answer decodes to an answer or an MCPError. Nothing else escapes."""

from __future__ import annotations

from typing import Any

import anyio
import orjson
from hypothesis import given
from hypothesis import strategies as st

from elicitkit.backplane.base import RedisPlace
from elicitkit.backplane.sealing import Sealer
from elicitkit.gateway.bridge import Finished, Question
from elicitkit.gateway.fleet import CallRelay, HolderGone, RemoteCall, _decode_answer, _notify
from elicitkit.protocol.errors import MCPError

from ._budget import fuzz_settings
from ._strategies import json_values

SEALER = Sealer(b"k" * 32)
KEY = b"elicitkit:gw:in:a"


def relay() -> CallRelay:
    return CallRelay(RedisPlace(None, "elicitkit:", SEALER), "a", 600.0)


@fuzz_settings(300)
@given(blob=st.binary(max_size=200), body=json_values, sealed_bytes=st.binary(max_size=60))
def test_any_blob_opens_to_a_message_or_none(blob: bytes, body: Any, sealed_bytes: bytes) -> None:
    reader = relay()
    assert reader._open(KEY, blob) is None  # not sealed by the fleet: dropped
    for sealed in (SEALER.seal(KEY, orjson.dumps(body)), SEALER.seal(KEY, sealed_bytes)):
        opened = reader._open(KEY, sealed)  # sealed, but no message of ours (no fresh time): dropped
        assert opened is None or (isinstance(opened, dict) and isinstance(opened.get("t"), float))


@fuzz_settings(300)
@given(body=json_values)
def test_any_answer_decodes_to_an_answer_or_an_error(body: Any) -> None:
    decoded = _decode_answer(body)
    assert isinstance(decoded, dict | MCPError)


class _Replying(CallRelay):
    def __init__(self, reply: Any) -> None:
        super().__init__(RedisPlace(None, "elicitkit:", SEALER), "b", 600.0)
        self.reply = reply

    async def step(self, holder: str, nonce: str, answer: Any, scope: Any = None) -> Any:
        if isinstance(self.reply, dict) and self.reply.get("gone"):
            raise HolderGone
        return self.reply


@fuzz_settings(300)
@given(
    reply=st.one_of(
        json_values.filter(lambda v: isinstance(v, dict)),
        st.fixed_dictionaries({"question": json_values}),
        st.fixed_dictionaries(
            {"question": st.fixed_dictionaries({"method": st.just("elicitation/create"), "params": json_values})}
        ),
        st.fixed_dictionaries({"end": json_values}),
    )
)
def test_any_step_reply_is_a_question_an_end_or_an_error(reply: dict[str, Any]) -> None:
    async def main() -> None:
        call = RemoteCall(_Replying(reply), "a", "n")
        try:
            event = await call.next()
        except (MCPError, HolderGone):
            return
        assert isinstance(event, Question | Finished)

    anyio.run(main)


class _Host:
    """Keeps what it was sent (checked after: ``_notify`` swallows what the host raises)."""

    def __init__(self) -> None:
        self.got: list[tuple[Any, ...]] = []

    async def report_progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.got.append((progress, total, message))

    async def log(self, level: str, data: Any, logger_name: str | None = None) -> None:
        self.got.append((level, logger_name))


def _well_formed(sent: tuple[Any, ...]) -> bool:
    if len(sent) == 3:
        progress, total, message = sent
        return (
            isinstance(progress, int | float)
            and (total is None or isinstance(total, int | float))
            and (message is None or isinstance(message, str))
        )
    level, name = sent
    return isinstance(level, str) and (name is None or isinstance(name, str))


@fuzz_settings(300)
@given(
    note=st.one_of(
        json_values,
        st.fixed_dictionaries(
            {},
            optional={k: json_values for k in ("progress", "total", "message", "log", "logger", "data")},
        ),
    )
)
def test_any_relayed_note_reaches_the_host_well_formed_or_not_at_all(note: Any) -> None:
    host = _Host()
    anyio.run(_notify, host, note)
    assert len(host.got) <= 1 and all(_well_formed(sent) for sent in host.got)
