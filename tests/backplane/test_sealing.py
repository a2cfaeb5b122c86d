"""What crosses Redis is sealed (AES-GCM): unreadable, and refused if changed or moved."""

from __future__ import annotations

from elicitkit.backplane.sealing import OVERHEAD, Sealer
from elicitkit.backplane.signing import fleet_key


def test_a_sealed_body_is_not_readable_and_opens_only_where_it_was_sealed() -> None:
    sealer = Sealer(fleet_key("shared"))
    body = b'{"result":{"action":"accept","content":{"card":"4111 1111 1111 1111"}}}'
    sealed = sealer.seal(b"elicitkit:inbox:a", body)
    assert len(sealed) == len(body) + OVERHEAD
    assert b"4111" not in sealed and b"accept" not in sealed
    assert sealer.seal(b"elicitkit:inbox:a", body) != sealed  # a fresh nonce each time
    assert sealer.open(b"elicitkit:inbox:a", sealed) == body
    assert sealer.open(b"elicitkit:inbox:b", sealed) is None  # moved to another channel
    assert Sealer(fleet_key("other")).open(b"elicitkit:inbox:a", sealed) is None  # another key
    for index in (0, 1, 13, len(sealed) - 1):  # version, nonce, ciphertext, tag
        changed = bytearray(sealed)
        changed[index] ^= 0x01
        assert sealer.open(b"elicitkit:inbox:a", bytes(changed)) is None, index
    assert sealer.open(b"elicitkit:inbox:a", sealed[: OVERHEAD - 1]) is None  # too short
    assert sealer.open(b"elicitkit:inbox:a", b"") is None
