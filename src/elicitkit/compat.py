"""Names from the seeds and from earlier elicitkit releases, kept working in one place.

New code should use the curated names in :mod:`elicitkit`; these stay importable from here
(``from elicitkit.compat import MCPServer``), so that code written against the seed projects
runs with that one import changed; :mod:`elicitkit` itself exports the curated names only.

===============================  =============================================================
name                             what it is now
===============================  =============================================================
``MCPServer``                    :class:`elicitkit.Server` (seed 001's name)
``LowLevelServer``               the method registry under ``Server``
``ServerSession``                one client connection as the server sees it
``RequestContext``               the per-request scope under :class:`elicitkit.Context`
``ElicitationHandler``           seed 000's handler surface (``ci_mode``, ``set_custom_handler``)
``create_form_request``          seed 000's form builder (``FormRequest`` from a property dict)
``create_url_request``           seed 000's URL builder
``UrlElicitationRequiredError``  :class:`elicitkit.UrlElicitationRequired` (the client's old name)
===============================  =============================================================

Seed-era methods kept on the objects themselves: ``ElicitationResult.to_dict()`` and
``.validation_error``, ``FormRequest.to_dict()``, ``Context.request_elicitation(message,
schema)`` and ``Server.request_elicitation`` (seed 002: ask with a dict schema from any handler).
"""

from __future__ import annotations

from elicitkit.client.handlers.handler import ElicitationHandler
from elicitkit.elicitation.errors import UrlElicitationRequired
from elicitkit.elicitation.requests import create_form_request, create_url_request
from elicitkit.server.lowlevel import LowLevelServer
from elicitkit.server.scope import RequestScope as RequestContext
from elicitkit.server.server import Server
from elicitkit.server.session import ServerSession

MCPServer = Server
UrlElicitationRequiredError = UrlElicitationRequired

__all__ = [
    "ElicitationHandler",
    "LowLevelServer",
    "MCPServer",
    "RequestContext",
    "ServerSession",
    "UrlElicitationRequiredError",
    "create_form_request",
    "create_url_request",
]
