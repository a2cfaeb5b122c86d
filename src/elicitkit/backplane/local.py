"""The default backplane: one process, nothing shared, nothing on a request's path."""

from __future__ import annotations

from elicitkit.backplane.base import Backplane


class InProcessBackplane(Backplane):
    """One instance: every session is local, so the transports never consult it.

    :meth:`~Backplane.notify_session` still works (it finds the session in this process), so code
    written for a fleet (say, a payment webhook completing a URL question) runs unchanged here.
    """

    shared = False
