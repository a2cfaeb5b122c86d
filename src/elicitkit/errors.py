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
    │   ├── BackendUnavailable        a gateway's backend cannot be reached, or died mid-call (names it)
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
    ├── ConfigError                   a gateway configuration that cannot be used (names the key; also a ValueError)
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
    │   ├── TokenStoreError           the token store cannot be read or written
    │   ├── InvalidToken              (server side) a bearer token the resource server refused: 401
    │   ├── ConnectionFailed          (server side) ctx.authorize connected nothing: declined, refused, ...
    │   └── SignInNeeded              (gateway) an ``oauth`` backend has no usable token: ``elicitkit auth login``
    └── TaskError                     the Tasks extension's store or state machine
        ├── TaskExists
        ├── TaskStoreUnavailable      the store cannot be reached (also an MCPError: -32603, try again)
        └── InvalidTransition         (also a ValueError)

Not errors: ``InputRequired`` (server/rounds/round.py) is a ``BaseException`` control signal
that ends a 2026 round, so that ``except Exception`` in a tool cannot swallow a question.
"""

from __future__ import annotations


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


# The leaves, imported where they live. Below the root on purpose: each of those modules
# imports ElicitkitError (or TaskError) from here, and finds it already defined.
# elicitkit.auth.errors: importing it runs elicitkit/auth/__init__.py, whose modules import
# names from the lines above. That package is cheap to import (its third-party libraries load
# where they are used), so the OAuth errors are imported eagerly like every other leaf.
from elicitkit.auth.errors import (  # noqa: E402
    AuthorizationDenied,
    AuthorizationTimeout,
    InsufficientScope,
    IssuerMismatch,
    MetadataError,
    RefreshRefused,
    RegistrationError,
    ResourceMismatch,
    StateMismatch,
    TokenEndpointError,
    TokenStoreError,
)
from elicitkit.backplane.signing import MissingFleetKey  # noqa: E402
from elicitkit.client.connect import ModernNotSupported, ServerUnreachable, SessionExpired  # noqa: E402
from elicitkit.client.responder import QuestionRefused  # noqa: E402
from elicitkit.client.rounds import (  # noqa: E402
    InputRequestViolation,
    InvalidResultType,
    MultiRoundTripError,
    TooManyInputRounds,
)
from elicitkit.client.tasks import TaskCancelled  # noqa: E402
from elicitkit.elicitation.errors import (  # noqa: E402
    ElicitationError,
    ElicitationFailed,
    ElicitationTimeout,
    ElicitationUnsupported,
    InvalidAnswer,
    SchemaError,
    UrlElicitationRequired,
)
from elicitkit.elicitation.patterns import UnsupportedPattern  # noqa: E402
from elicitkit.elicitation.requests import InvalidRequest  # noqa: E402
from elicitkit.gateway.errors import BackendUnavailable, ConfigError, SignInNeeded  # noqa: E402
from elicitkit.protocol.errors import ConnectionClosed, LocalProtocolError, MCPError, RequestTimeout  # noqa: E402
from elicitkit.protocol.jsonrpc import InvalidMessage  # noqa: E402
from elicitkit.protocol.modern import InvalidToolHeaders  # noqa: E402
from elicitkit.protocol.tasks import InvalidTransition  # noqa: E402
from elicitkit.server.auth.tokens import ConnectionFailed, InvalidToken  # noqa: E402
from elicitkit.server.pages import AnswerOnPage  # noqa: E402
from elicitkit.server.resolvers import NotResolved  # noqa: E402
from elicitkit.server.rounds.keys import KeyRingError  # noqa: E402
from elicitkit.server.rounds.sealing import InvalidRequestState  # noqa: E402
from elicitkit.server.scope import TooManyQuestions  # noqa: E402
from elicitkit.server.tasks.store import TaskExists, TaskStoreUnavailable  # noqa: E402
from elicitkit.server.tools import ToolError  # noqa: E402
from elicitkit.server.uri_templates import InvalidTemplate  # noqa: E402
from elicitkit.transports.http.serve import CannotListen  # noqa: E402

__all__ = [
    "AnswerOnPage",
    "AuthError",
    "AuthorizationDenied",
    "AuthorizationTimeout",
    "BackendUnavailable",
    "CannotListen",
    "ConfigError",
    "ConnectionClosed",
    "ConnectionFailed",
    "ElicitationError",
    "ElicitationFailed",
    "ElicitationTimeout",
    "ElicitationUnsupported",
    "ElicitkitError",
    "InputRequestViolation",
    "InsufficientScope",
    "InvalidAnswer",
    "InvalidMessage",
    "InvalidRequest",
    "InvalidRequestState",
    "InvalidResultType",
    "InvalidTemplate",
    "InvalidToken",
    "InvalidToolHeaders",
    "InvalidTransition",
    "IssuerMismatch",
    "KeyRingError",
    "LocalProtocolError",
    "MCPError",
    "MetadataError",
    "MissingFleetKey",
    "ModernNotSupported",
    "MultiRoundTripError",
    "NotResolved",
    "QuestionRefused",
    "RefreshRefused",
    "RegistrationError",
    "RequestTimeout",
    "ResourceMismatch",
    "SchemaError",
    "ServerUnreachable",
    "SessionExpired",
    "SignInNeeded",
    "StateMismatch",
    "TaskCancelled",
    "TaskError",
    "TaskExists",
    "TaskStoreUnavailable",
    "TokenEndpointError",
    "TokenStoreError",
    "TooManyInputRounds",
    "TooManyQuestions",
    "ToolError",
    "UnsupportedPattern",
    "UrlElicitationRequired",
]
