"""What sealing costs on the fleet path: AES-256-GCM seal + open against the HMAC it replaced.

``python benchmarks/sealing.py``: per message size, microseconds to seal and to open one message
(the median of several runs), and the bytes added. Only a fleet pays this (every message and
event that crosses Redis, every task record written or read there); a single process never seals.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import statistics
import time

from elicitkit.backplane.sealing import OVERHEAD, Sealer
from elicitkit.backplane.signing import fleet_key

SIZES = (200, 1_000, 4_000, 16_000)  # an answer, a question, a result, a large result
ROUNDS, PER_ROUND = 7, 20_000


def _mac_seal(key: bytes, where: bytes, body: bytes) -> bytes:  # what signing.Signer did before
    return hmac.new(key, where + b"\x00" + body, hashlib.sha256).digest()[:16] + body


def _mac_open(key: bytes, where: bytes, sealed: bytes) -> bytes | None:
    body = sealed[16:]
    mac = hmac.new(key, where + b"\x00" + body, hashlib.sha256).digest()[:16]
    return body if hmac.compare_digest(mac, sealed[:16]) else None


def _per_op_us(action: object) -> float:
    runs = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        for _ in range(PER_ROUND):
            action()  # type: ignore[operator]
        runs.append((time.perf_counter() - started) / PER_ROUND * 1e6)
    return statistics.median(runs)


def main() -> None:
    key = fleet_key("benchmark")
    sealer = Sealer(key)
    where = b"elicitkit:inbox:i0"
    print(f"{'bytes':>6} | {'AEAD seal':>9} | {'AEAD open':>9} | {'HMAC seal':>9} | {'HMAC open':>9} | added")
    for size in SIZES:
        body = b"x" * size
        sealed = sealer.seal(where, body)
        maced = _mac_seal(key, where, body)
        figures = (
            _per_op_us(functools.partial(sealer.seal, where, body)),
            _per_op_us(functools.partial(sealer.open, where, sealed)),
            _per_op_us(functools.partial(_mac_seal, key, where, body)),
            _per_op_us(functools.partial(_mac_open, key, where, maced)),
        )
        print(f"{size:>6} | " + " | ".join(f"{f:>6.2f} us" for f in figures) + f" | {OVERHEAD} B (HMAC: 16 B)")


if __name__ == "__main__":
    main()
