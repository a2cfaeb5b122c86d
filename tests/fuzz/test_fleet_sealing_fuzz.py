"""What a fleet reads back from Redis, fuzzed (issue 28): anyone with Redis access can put any
bytes there. Invariant: :meth:`Sealer.open` returns the body only for an untouched blob sealed
at that place under that key, and None for anything else; it never raises. (The task store's
refusal of a changed record: tests/server/tasks/test_redis_sealed.py.)"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from elicitkit.backplane.sealing import Sealer
from elicitkit.backplane.signing import fleet_key

from ._budget import fuzz_settings

SEALER = Sealer(fleet_key("fuzz"))
WHERE = b"elicitkit:inbox:i0"
GENUINE = SEALER.seal(WHERE, b'{"k":"feed","body":{"result":{"action":"accept"}}}')


@fuzz_settings(500)
@given(st.binary(max_size=400))
def test_random_bytes_never_open(data: bytes) -> None:
    assert SEALER.open(WHERE, data) is None or data == GENUINE


@fuzz_settings(500)
@given(st.integers(0, len(GENUINE) - 1), st.integers(1, 255), st.binary(max_size=8), st.booleans())
def test_a_changed_genuine_blob_never_opens(index: int, flip: int, extra: bytes, truncate: bool) -> None:
    changed = bytearray(GENUINE)
    changed[index] ^= flip
    blob = bytes(changed[:index] if truncate else changed) + extra
    assert SEALER.open(WHERE, blob) is None or blob == GENUINE  # (a cut put back as it was)


@fuzz_settings(200)
@given(st.binary(max_size=60))
def test_a_genuine_blob_opens_nowhere_else(where: bytes) -> None:
    assert SEALER.open(where, GENUINE) is None or where == WHERE
