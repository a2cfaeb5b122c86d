"""Every error elicitkit raises, under one root: ``except ElicitkitError`` catches them all.

The classes live beside the code that raises them (a JSON-RPC error in protocol/, a bad answer
in elicitation/, ...); this module names the root and documents the whole tree, and every
name below can be imported from here. Three leaves are also the builtin their name suggests,
on purpose, so generic code keeps working: ``SchemaError`` is a ``TypeError`` (the schema is
the wrong kind of thing), ``InvalidAnswer`` a ``ValueError``, ``ElicitationTimeout`` a
``TimeoutError``.

::

    ElicitkitError
    ├── MCPError                      a JSON-RPC error: .code, .message, .data (ours or the peer's)
    │   ├── RequestTimeout            the peer did not answer in time
    │   ├── ConnectionClosed          the connection ended first
    │   │   ├── ServerUnreachable     a client could not start or reach the server (says what to try)
    │   │   └── SessionExpired        the server forgot the HTTP session and a new one was refused
    │   ├── ModernNotSupported        a client forced 2026-07-28 on a server that does not speak it
    │   ├── TaskCancelled             a task the client waited on was cancelled
    │   └── UrlElicitationRequired    -32042: complete these URL elicitations, then retry (also an ElicitationError)
    │       └── AnswerOnPage          the question waits on a server-hosted page (the fallback ladder's link)
    ├── ElicitationError              asking the person did not give an answer
    │   ├── SchemaError               a requested schema outside the spec's subset (refused before sending)
    │   ├── InvalidAnswer             an answer that does not fit its question
    │   ├── UnsupportedPattern        a pattern RE2 cannot run in linear time (also a ValueError)
    │   ├── ElicitationUnsupported    the client cannot be asked this way
    │   ├── ElicitationFailed         the client answered with an error
    │   ├── ElicitationTimeout        nobody answered in time; the question was withdrawn
    │   ├── NotResolved               a resolver's question was declined or cancelled
    │   ├── TooManyQuestions          one request asked more than ``Server(max_questions=)``
    │   ├── QuestionRefused           a client handler refuses a question outright
    │   └── InvalidRequest            a server's elicitation request the client cannot take
    ├── ToolError                     raise from a tool: the call ends with ``isError`` and this text
    ├── InvalidMessage                bytes that are not a JSON-RPC message (answered -32700/-32600)
    ├── LocalProtocolError            this side broke the protocol (a bug in the caller)
    ├── InvalidRequestState           a 2026 requestState that is tampered, expired or not this request's
    ├── MultiRoundTripError           a 2026 server broke the multi-round-trip rules
    │   ├── TooManyInputRounds
    │   ├── InputRequestViolation
    │   └── InvalidResultType
    ├── CannotListen                  an HTTP server could not take its host and port (also an OSError)
    ├── KeyRingError                  state keys that cannot be loaded (also a ValueError)
    ├── MissingFleetKey               a fleet backplane without a shared key (also a ValueError)
    ├── InvalidToolHeaders            a tool's x-mcp-header declarations are unusable (also a ValueError)
    ├── InvalidTemplate               a resource URI template that does not parse (also a ValueError)
    ├── AuthError                     reaching a protected server failed (OAuth); says what to do, never a secret
    │   ├── MetadataError             resource or authorization-server metadata missing, not JSON, incomplete
    │   ├── IssuerMismatch            an issuer other than the expected one (RFC 8414 metadata, RFC 9207 iss)
    │   ├── ResourceMismatch          the metadata's resource is not the server being reached (RFC 9728)
    │   ├── RegistrationError         no client identity for the authorization server (CIMD, DCR, pre-registered)
    │   ├── AuthorizationDenied       the redirect carried an error (declined, or refused)
    │   ├── StateMismatch             the redirect's state is not the one sent
    │   ├── TokenEndpointError        the token endpoint refused, hung or answered garbage
    │   │   └── RefreshRefused        a refresh was refused: authorize again
    │   ├── InsufficientScope         403 insufficient_scope after the allowed re-authorizations
    │   ├── AuthorizationTimeout      nobody finished signing in in the browser in time (also a TimeoutError)
    │   └── TokenStoreError           the token store cannot be read or written
    └── TaskError                     the Tasks extension's store or state machine
        ├── TaskExists
        ├── TaskStoreUnavailable      the store cannot be reached (also an MCPError: -32603, try again)
        └── InvalidTransition         (also a ValueError)

Not errors: ``InputRequired`` (server/rounds/round.py) is a ``BaseException`` control signal
that ends a 2026 round, so that ``except Exception`` in a tool cannot swallow a question.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any


class ElicitkitError(Exception):
    """The root of every error elicitkit raises.

    >>> try:
    ...     raise ToolError("no such city")
    ... except ElicitkitError as exc:
    ...     print(exc)
    no such city
    """


class AuthError(ElicitkitError):
    """Reaching an OAuth-protected server failed; the message says what to do and never holds a secret."""


class TaskError(ElicitkitError):
    """Something the Tasks extension's store or state machine refused."""


_HOMES = {
    "MCPError": "elicitkit.protocol.errors",
    "RequestTimeout": "elicitkit.protocol.errors",
    "ConnectionClosed": "elicitkit.protocol.errors",
    "LocalProtocolError": "elicitkit.protocol.errors",
    "InvalidMessage": "elicitkit.protocol.jsonrpc",
    "InvalidToolHeaders": "elicitkit.protocol.modern",
    "InvalidTransition": "elicitkit.protocol.tasks",
    "ServerUnreachable": "elicitkit.client.connect",
    "SessionExpired": "elicitkit.client.connect",
    "ModernNotSupported": "elicitkit.client.connect",
    "TaskCancelled": "elicitkit.client.tasks",
    "QuestionRefused": "elicitkit.client.responder",
    "MultiRoundTripError": "elicitkit.client.rounds",
    "TooManyInputRounds": "elicitkit.client.rounds",
    "InputRequestViolation": "elicitkit.client.rounds",
    "InvalidResultType": "elicitkit.client.rounds",
    "ElicitationError": "elicitkit.elicitation.errors",
    "SchemaError": "elicitkit.elicitation.errors",
    "InvalidAnswer": "elicitkit.elicitation.errors",
    "ElicitationUnsupported": "elicitkit.elicitation.errors",
    "ElicitationFailed": "elicitkit.elicitation.errors",
    "ElicitationTimeout": "elicitkit.elicitation.errors",
    "UrlElicitationRequired": "elicitkit.elicitation.errors",
    "InvalidRequest": "elicitkit.elicitation.requests",
    "UnsupportedPattern": "elicitkit.elicitation.patterns",
    "NotResolved": "elicitkit.server.resolvers",
    "TooManyQuestions": "elicitkit.server.asking",
    "ToolError": "elicitkit.server.tools",
    "InvalidRequestState": "elicitkit.server.rounds.sealing",
    "KeyRingError": "elicitkit.server.rounds.keys",
    "MissingFleetKey": "elicitkit.backplane.signing",
    "InvalidTemplate": "elicitkit.server.uri_templates",
    "TaskExists": "elicitkit.server.tasks.store",
    "TaskStoreUnavailable": "elicitkit.server.tasks.store",
    "AnswerOnPage": "elicitkit.server.pages",
    "MetadataError": "elicitkit.auth.errors",
    "IssuerMismatch": "elicitkit.auth.errors",
    "ResourceMismatch": "elicitkit.auth.errors",
    "RegistrationError": "elicitkit.auth.errors",
    "AuthorizationDenied": "elicitkit.auth.errors",
    "StateMismatch": "elicitkit.auth.errors",
    "TokenEndpointError": "elicitkit.auth.errors",
    "RefreshRefused": "elicitkit.auth.errors",
    "InsufficientScope": "elicitkit.auth.errors",
    "AuthorizationTimeout": "elicitkit.auth.loopback",
    "TokenStoreError": "elicitkit.auth.stores",
    "CannotListen": "elicitkit.transports.http.serve",
}

if TYPE_CHECKING:
    pass


def __getattr__(name: str) -> Any:
    # Lazy: the modules that define the leaves import ElicitkitError from here.
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)


__all__ = ["AuthError", "ElicitkitError", "TaskError", *_HOMES]
