"""2026-07-28 rounds: how a request asks without a back channel.

:mod:`.round` holds one request's round (answers in, questions out) and the control signal
that ends it; :mod:`.sealing` seals what must survive to the next round into
``requestState``; :mod:`.keys` holds the keys that seal it.
"""

from elicitkit.server.rounds.keys import KeyRing, KeyRingError
from elicitkit.server.rounds.round import InputRequired, InputRound, only_asking
from elicitkit.server.rounds.sealing import AeadStateCodec, InvalidRequestState, SpentStates, StateCodec, default_codec

__all__ = [
    "AeadStateCodec",
    "InputRequired",
    "InputRound",
    "InvalidRequestState",
    "KeyRing",
    "KeyRingError",
    "SpentStates",
    "StateCodec",
    "default_codec",
    "only_asking",
]
