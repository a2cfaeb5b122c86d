"""Moved to :mod:`elicitkit.runtime.peer`; this name stays importable while callers move over."""

from elicitkit.runtime.contract import Send
from elicitkit.runtime.peer import IncomingRequest, Peer, ProgressCallback

__all__ = ["IncomingRequest", "Peer", "ProgressCallback", "Send"]
