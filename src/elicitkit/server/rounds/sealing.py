"""Sealed ``requestState`` for 2026-07-28 multi-round requests (protocol brief §4.5).

A 2026 server keeps nothing between rounds: what it needs to carry on travels in
``requestState``, which the client echoes and an attacker may edit. So the state is sealed with
an AEAD, bound to the request it belongs to (method, target, arguments, principal) and given a
short expiry. Opening fails closed with one exception whose wire message never says why; the
real reason is for the server log.

Token: ``"v2." + kid + "." + base64url(nonce || ciphertext)``, no padding: one AES-256-GCM
layer over the payload (which holds the binding), with the version, the key id and the binding
as associated data, so a token for one request cannot be decrypted for another even if the
comparison of bindings were wrong. Only when that fails does the codec read the payload's
binding without the tag (GCM is counter mode underneath) and authenticate the token under it:
if that holds, the token is ours and was sealed for another request, logged as "other tool"
rather than "tampered". ``v1`` tokens (two layers: an outer one recording the binding, an inner
one under it) are still opened, so rounds in flight survive an upgrade; they are no longer sealed.

Sans-I/O: no event loop, no logging; the clock is injectable.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import math
import operator
import os
import struct
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, cast, runtime_checkable

import orjson
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers import Cipher, modes
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from elicitkit._frozen import frozen_builder
from elicitkit._models import constructor
from elicitkit.errors import ElicitkitError
from elicitkit.protocol.errors import INVALID_PARAMS, MCPError
from elicitkit.protocol.modern import NAME_PARAM, RESERVED_PARAMS
from elicitkit.server.rounds.keys import Key, KeyRing, b64decode, b64encode, load_keyring

__all__ = [
    "DEFAULT_TTL_SECONDS",
    "MAX_TOKEN_CHARS",
    "PUBLIC_MESSAGE",
    "RESERVED_PARAMS",
    "AeadStateCodec",
    "InvalidRequestState",
    "SealedState",
    "SpentStates",
    "SpentStore",
    "StateBinding",
    "StateCodec",
    "canonical_json",
    "default_codec",
    "digest_arguments",
    "fingerprint_asked",
    "fingerprint_question",
    "schema_json",
]

TOKEN_VERSION = "v2"
TOKEN_V1 = "v1"  # two layers: opened, no longer sealed
PAYLOAD_VERSION = 1
DEFAULT_TTL_SECONDS = 600
MAX_TOKEN_CHARS = 64 * 1024
PUBLIC_MESSAGE = "requestState is invalid or expired; restart the request without it"

_NONCE = 12
_PAYLOAD_NONCE = 12  # random bytes of the payload's own nonce (single-use rounds key on it)
_TAG = 16
_LEN = struct.Struct(">I")
_MIN_BLOB = _NONCE + _TAG  # below this the token cannot even hold a nonce and a tag


# -- canonical JSON and digests -----------------------------------------------------------


def canonical_json(value: Any) -> bytes:
    """One byte string per JSON value, so equal arguments always give equal digests.

    Sorted keys, compact separators, UTF-8 without escaping; ``1``, ``1.0``, ``"1"`` and
    ``true`` stay distinct. Lone surrogates (valid in Python JSON, not in UTF-8) are encoded
    with ``surrogatepass`` so hostile arguments cannot crash the binding computation.
    """
    try:
        fast = orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # lone surrogates, non-string keys, huge integers...: the careful path decides
        fast = None
    # orjson writes NaN and infinities as null, which must be refused (the careful path raises).
    if fast is not None and (b"null" not in fast or _finite(value)):
        return fast
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.encode("utf-8", "surrogatepass")


def _finite(value: Any) -> bool:
    """No NaN or infinity anywhere inside ``value``."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(_finite(v) for v in value)
    return True


def digest_arguments(arguments: Mapping[str, Any] | None) -> str:
    """SHA-256 hex of the canonical arguments: what a sealed state is bound to.

    ``None`` counts as ``{}`` (an omitted ``arguments`` is an empty one). Top-level
    ``_meta``, ``inputResponses`` and ``requestState`` are dropped: they change every round.
    """
    if arguments is None:
        salient: Mapping[str, Any] = {}
    elif type(arguments) is dict and RESERVED_PARAMS.isdisjoint(arguments):
        salient = arguments  # nothing to drop: no copy
    else:
        salient = {k: v for k, v in arguments.items() if k not in RESERVED_PARAMS}
    try:
        return hashlib.sha256(canonical_json(salient)).hexdigest()
    except RecursionError:  # ~1,000 levels: the peer's mistake, not ours (issue 12 #12)
        raise MCPError(INVALID_PARAMS, "arguments nest too deeply to be bound to a requestState") from None


def fingerprint_question(question: Any) -> str:
    """A short (128-bit) fingerprint of an input request, to pin a recorded answer to it.

    If a handler later asks something different under the same key, the old answer no longer
    matches and must not be replayed.
    """
    return b64encode(hashlib.sha256(canonical_json(question)).digest()[:16])


def schema_json(schema: Any) -> orjson.Fragment | None:
    """A schema's :func:`canonical_json`, made once for a schema asked again and again (a form's
    memoized one), for :func:`fingerprint_asked`; None when only the careful path can say."""
    try:
        fast = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return None
    return orjson.Fragment(fast) if b"null" not in fast or _finite(schema) else None


def fingerprint_asked(method: str, params: Mapping[str, Any], schema: orjson.Fragment | None) -> str:
    """:func:`fingerprint_question` of ``{"method": method, "params": params}``, the same value,
    where ``schema`` is :func:`schema_json` of ``params["requestedSchema"]``: the schema, most
    of the question, is not sorted and written again for every question."""
    if schema is not None:
        try:
            fast = orjson.dumps(
                {"method": method, "params": {**params, "requestedSchema": schema}}, option=orjson.OPT_SORT_KEYS
            )
        except TypeError:  # lone surrogates in the message...: the careful path decides
            fast = None
        if fast is not None and (b"null" not in fast or _finite(params)):
            return b64encode(hashlib.sha256(fast).digest()[:16])
    return fingerprint_question({"method": method, "params": params})


# -- binding ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StateBinding:
    """The request a state belongs to; a token opens only for an equal binding."""

    method: str
    target: str  # tool or prompt name, or resource URI
    arguments_digest: str  # digest_arguments(...) of the request's arguments
    principal: str | None = None  # the authenticated user, when there is one

    @classmethod
    def for_request(cls, method: str, params: Mapping[str, Any], principal: str | None = None) -> StateBinding:
        """The binding of a ``tools/call``, ``prompts/get`` or ``resources/read`` request.

        Tools and prompts bind ``name`` and ``arguments``; a resource binds ``uri`` and any
        other params. Raises ``ValueError`` for other methods or a missing target.
        """
        target_param = NAME_PARAM.get(method)
        if target_param is None:
            raise ValueError(f"{method} cannot carry requestState")
        target = params.get(target_param)
        if not isinstance(target, str):
            raise ValueError(f"{method} params need a string {target_param!r}")
        if method == "resources/read":
            arguments: Any = {k: v for k, v in params.items() if k != "uri"}
        else:
            arguments = params.get("arguments")
            if type(arguments) is dict and RESERVED_PARAMS.isdisjoint(arguments):
                # digest_arguments' common case, inline (every 2026 call binds its round)
                try:
                    fast = orjson.dumps(arguments, option=orjson.OPT_SORT_KEYS)
                except TypeError:  # the careful path decides (and says why)
                    fast = None
                if fast is not None and b"null" not in fast:  # (a null may be a NaN: that path decides)
                    return _binding(method, target, _sha256(fast).hexdigest(), principal)
            elif arguments is not None and type(arguments) is not dict and not isinstance(arguments, Mapping):
                raise ValueError(f"{method} arguments must be an object")
        return _binding(method, target, digest_arguments(arguments), principal)

    def _fields(self) -> list[str | None]:
        return [self.method, self.target, self.arguments_digest, self.principal]


_sha256 = hashlib.sha256
# ``StateBinding(method, target, digest, principal)``, made quicker (two per 2026 round trip).
_binding: Callable[[str, str, str, str | None], StateBinding] = frozen_builder(StateBinding)


def _mismatch(recorded: Sequence[Any], expected: StateBinding) -> str | None:
    """Why a recorded binding differs from the request's, for the log (None if equal)."""
    method, target, digest, principal = recorded
    if method != expected.method:
        return f"replayed against another method (sealed for {_preview(method)}, got {_preview(expected.method)})"
    if target != expected.target:
        return f"replayed against another target (sealed for {_preview(target)}, got {_preview(expected.target)})"
    if digest != expected.arguments_digest:
        return f"replayed with other arguments (digest {str(digest)[:12]}…, got {expected.arguments_digest[:12]}…)"
    if principal != expected.principal:
        if principal is None:
            return "replayed by a principal (sealed without one)"
        if expected.principal is None:
            return "replayed without a principal (sealed for one)"
        return "replayed by another principal"
    return None


# -- payload ------------------------------------------------------------------------------


class SealedState(BaseModel):
    """What a server keeps between rounds; the codec stamps version, binding, ``exp`` and ``nonce``.

    The caller decides ``round``, ``questions`` (key -> :func:`fingerprint_question` of what
    was asked), ``answers`` (key -> the answer received, for deterministic replay) and ``app``
    (any JSON). Every answer needs a question, so it can be checked against what is asked now.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)

    version: int = PAYLOAD_VERSION
    method: str = ""
    target: str = ""
    arguments_digest: str = ""
    principal: str | None = None
    exp: int = 0
    round: int = Field(default=0, ge=0)
    nonce: str = ""
    questions: dict[str, str] = Field(default_factory=dict)
    answers: dict[str, Any] = Field(default_factory=dict)
    app: Any = None

    @model_validator(mode="after")
    def _answers_are_pinned(self) -> SealedState:
        unpinned = sorted(set(self.answers) - set(self.questions))
        if unpinned:
            raise ValueError(f"answers without a question fingerprint: {unpinned}")
        return self

    @property
    def binding(self) -> StateBinding:
        return StateBinding(self.method, self.target, self.arguments_digest, self.principal)

    def answer_matches(self, key: str, question: Any) -> bool:
        """True if an answer is recorded for ``key`` and it answered exactly ``question``."""
        return key in self.answers and self.questions.get(key) == fingerprint_question(question)


# -- errors -------------------------------------------------------------------------------


class InvalidRequestState(ElicitkitError):
    """Any failure to open a state. ``str()`` is the public message; log ``reason``.

    One type and one wire message for every cause, so a client learns nothing about which
    check failed; ``reason`` names it for the operator.
    """

    public_message: ClassVar[str] = PUBLIC_MESSAGE

    def __init__(self, reason: str) -> None:
        super().__init__(PUBLIC_MESSAGE)
        self.reason = reason

    def __repr__(self) -> str:
        return f"InvalidRequestState(reason={self.reason!r})"

    def to_mcp_error(self) -> MCPError:
        """The ``-32602`` error to send: public message only, no ``data``."""
        return MCPError(INVALID_PARAMS, PUBLIC_MESSAGE)


# -- codecs -------------------------------------------------------------------------------


@runtime_checkable
class StateCodec(Protocol):
    """Turns a payload into an opaque token and back; swap it for a server-side store, say."""

    def seal(self, payload: SealedState, binding: StateBinding) -> str: ...

    def open(self, token: str, binding: StateBinding) -> SealedState:
        """The payload, or :class:`InvalidRequestState` for any failure."""
        ...


class SpentStates:
    """Single-use rounds: the states already opened, each remembered until it would expire.

    By default a sealed ``requestState`` opens any number of times within its TTL (the spec
    allows it): a client may retry a round whose answer was lost, and may even replace an
    answer the state already holds. Give a codec ``spent=SpentStates()`` and every state opens
    once; the next attempt is refused with the one public error. This store lives in one
    process: a fleet needs a shared one (a :class:`SpentStore`, e.g.
    ``elicitkit.server.rounds.redis_spent.RedisSpentStates``) so that a replay cannot land on
    another instance.
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._until: dict[str, int] = {}
        self._clock = clock

    def claim(self, nonce: str, expires: int) -> bool:
        """True the first time ``nonce`` is claimed (before ``expires``), False ever after."""
        now = self._clock()
        if len(self._until) > 1024 and next(iter(self._until.values())) <= now:
            self._until = {n: exp for n, exp in self._until.items() if exp > now}
        if nonce in self._until:
            return False
        self._until[nonce] = expires
        return True

    def __len__(self) -> int:
        return len(self._until)


@runtime_checkable
class SpentStore(Protocol):
    """Single-use rounds shared by a fleet: the claim is a round trip to a shared store, so it
    is awaited. True the first time ``nonce`` is claimed (before ``expires``, epoch seconds).

    A codec cannot await inside :meth:`StateCodec.open` (it is synchronous, and the default
    path must not pay for an await it does not need), so with such a store ``open`` only
    verifies, and the round claims the nonce before the handler runs (``InputRound.claim``).
    """

    async def claim(self, nonce: str, expires: int) -> bool: ...


class AeadStateCodec:
    """The default codec: AES-256-GCM under a :class:`KeyRing`, with an expiry.

    ``spent``: make every state single-use. A :class:`SpentStates` (one process) is claimed
    inside :meth:`open`; a :class:`SpentStore` whose ``claim`` is a coroutine (a fleet's) is
    left to the round, which awaits it before the handler runs (see ``spent_later``).
    """

    def __init__(
        self,
        keyring: KeyRing,
        *,
        ttl_seconds: int = DEFAULT_TTL_SECONDS,
        clock: Callable[[], float] = time.time,
        max_token_chars: int = MAX_TOKEN_CHARS,
        spent: SpentStates | SpentStore | None = None,
    ) -> None:
        if ttl_seconds <= 0:
            raise ValueError("ttl_seconds must be positive")
        self.keyring = keyring
        self.ttl_seconds = ttl_seconds
        self.max_token_chars = max_token_chars
        self.spent = spent
        self._clock = clock

    @property
    def spent(self) -> SpentStates | SpentStore | None:
        """The single-use store (None: a state opens any number of times within its TTL).

        Settable after construction (a fleet's backplane swaps in its shared store)."""
        return self._spent

    @spent.setter
    def spent(self, spent: SpentStates | SpentStore | None) -> None:
        self._spent = spent
        # Claimed in open() (in-process) or by the round after open() (awaited: a shared store).
        self._spent_now: SpentStates | None = None
        self.spent_later: SpentStore | None = None
        if spent is not None:
            if inspect.iscoroutinefunction(spent.claim):
                self.spent_later = cast(SpentStore, spent)
            else:
                self._spent_now = cast(SpentStates, spent)

    def seal(self, payload: SealedState, binding: StateBinding, *, ttl_seconds: int | None = None) -> str:
        """Stamp and seal ``payload`` for ``binding``; ``ttl_seconds`` overrides (URL flows wait longer).

        Raises ``ValueError`` if ``app`` or ``answers`` hold non-JSON values or the token would
        exceed ``max_token_chars`` (which :meth:`open` would refuse).
        """
        return self.seal_values(payload.round, payload.questions, payload.answers, payload.app, binding, ttl_seconds)

    def seal_values(
        self,
        round_no: int,
        questions: dict[str, str],
        answers: dict[str, Any],
        app: Any,
        binding: StateBinding,
        ttl_seconds: int | None = None,
    ) -> str:
        """:meth:`seal` of a payload given as its values: what a round seals, with no model built
        first (the caller vouches for what :class:`SealedState` validates: ``round_no >= 0``,
        string fingerprints, every answer's key among ``questions``)."""
        key = self.keyring._keys[0]  # (_sealing(), without the call)
        ttl = self.ttl_seconds if ttl_seconds is None else ttl_seconds
        # The two random values a seal needs (the payload's nonce and the AES nonce) from one
        # read of the OS's CSPRNG, each its own bytes: one syscall, not two.
        rand = os.urandom(_PAYLOAD_NONCE + _NONCE)
        # The stamped payload as a plain dict in field order: what ``model_copy(update=...)``
        # and ``model_dump()`` gave, without pydantic on the round's path.
        stamped = {
            "version": PAYLOAD_VERSION,
            "method": binding.method,
            "target": binding.target,
            "arguments_digest": binding.arguments_digest,
            "principal": binding.principal,
            "exp": int(self._clock()) + ttl,
            "round": round_no,
            "nonce": b64encode(rand[:_PAYLOAD_NONCE]),  # what secrets.token_urlsafe(12) gave
            "questions": questions,
            "answers": answers,
            "app": app,
        }
        try:
            body = _payload_json(stamped)
        except (TypeError, ValueError) as exc:
            raise ValueError("SealedState answers and app must hold only JSON values") from exc
        nonce = rand[_PAYLOAD_NONCE:]
        blob = nonce + key.single.encrypt(nonce, body, _v2_aad(key.kid, binding))
        token = f"{TOKEN_VERSION}.{key.kid}.{b64encode(blob)}"
        if len(token) > self.max_token_chars:
            raise ValueError(f"sealed state is {len(token)} characters, over the {self.max_token_chars} limit")
        return token

    def open(self, token: object, binding: StateBinding) -> SealedState:
        """Verify and decrypt; every failure is :class:`InvalidRequestState` with a precise reason.

        With an awaited ``spent`` store (``spent_later``) the state is not claimed here: the
        caller must ``await spent_later.claim(payload.nonce, payload.exp)`` before using it.
        """
        if not isinstance(token, str):
            raise InvalidRequestState(f"not a string ({type(token).__name__})")
        if len(token) > self.max_token_chars:
            raise InvalidRequestState(f"oversized ({len(token)} characters, limit {self.max_token_chars})")
        # Exactly two dots: found, not split (a split walks the whole token character by character).
        version, _, rest = token.partition(".")
        kid, dot, data = rest.partition(".")
        if (version != TOKEN_VERSION and version != TOKEN_V1) or not dot or "." in data:
            raise InvalidRequestState(f"bad prefix or shape (expected '{TOKEN_VERSION}.<kid>.<data>')")
        key = self.keyring._by_kid.get(kid)  # (_lookup(), without the call)
        if key is None:
            raise InvalidRequestState(f"unknown key id {_preview(kid)}")
        blob = b64decode(data)
        if blob is None:
            raise InvalidRequestState("bad base64url data")
        if len(blob) < _MIN_BLOB:
            raise InvalidRequestState(f"truncated ({len(blob)} bytes)")
        if version == TOKEN_VERSION:
            try:
                body = key.single.decrypt(blob[:_NONCE], blob[_NONCE:], _v2_aad(kid, binding))
            except InvalidTag:
                raise InvalidRequestState(_why_refused(key, kid, blob, binding)) from None
        else:
            body = _open_v1(key, kid, blob, binding)
        payload = _fast_payload(body)
        if payload is None:  # not the shape seal() writes: the strict model decides
            try:
                payload = SealedState.model_validate_json(body)
            except ValidationError:
                raise InvalidRequestState("malformed payload") from None
        if (
            payload.version != PAYLOAD_VERSION
            or payload.method != binding.method
            or payload.target != binding.target
            or payload.arguments_digest != binding.arguments_digest
            or payload.principal != binding.principal
        ):
            raise InvalidRequestState("payload version or binding disagrees with its envelope")
        now = self._clock()
        if now >= payload.exp:
            raise InvalidRequestState(f"expired {now - payload.exp:.0f}s ago")
        if self._spent_now is not None and not self._spent_now.claim(payload.nonce, payload.exp):
            raise InvalidRequestState("already used (single-use rounds)")
        return payload


# -- helpers ------------------------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def _header_aad(kid: str) -> bytes:
    return canonical_json(["elicitkit/requestState", TOKEN_V1, kid])


def _binding_aad(kid: str, fields: Sequence[str | None], version: str = TOKEN_V1) -> bytes:
    return _strings_json(["elicitkit/requestState", version, kid, *fields])


def _v2_aad(kid: str, binding: StateBinding) -> bytes:
    """``_binding_aad(kid, binding._fields(), TOKEN_VERSION)``, the same bytes, in one call
    (every round seals or opens one)."""
    values = [
        "elicitkit/requestState",
        TOKEN_VERSION,
        kid,
        binding.method,
        binding.target,
        binding.arguments_digest,
        binding.principal,
    ]
    try:
        return orjson.dumps(values)
    except TypeError:
        return canonical_json(values)


_TAMPERED = "authentication failed (tampered, cut short, or sealed with another key under this id)"


def _why_refused(key: Key, kid: str, blob: bytes, binding: StateBinding) -> str:
    """Why a v2 token did not open for ``binding``, for the log (the failure path only).

    AES-GCM is counter mode plus a tag: the payload can be read without the tag (the counter
    starts at the nonce followed by 2). What it says is trusted only once the token
    authenticates under the binding it names; then the token is ours, sealed for another
    request, and the mismatch is named as a v1 token's outer layer named it."""
    nonce, sealed = blob[:_NONCE], blob[_NONCE:-_TAG]
    try:
        decryptor = Cipher(key.single_aes, modes.CTR(nonce + b"\x00\x00\x00\x02")).decryptor()
        plain = decryptor.update(sealed) + decryptor.finalize()
        try:
            claimed = orjson.loads(plain)
        except orjson.JSONDecodeError:  # lone surrogates (written with surrogatepass): the stdlib reads them
            claimed = json.loads(plain)
        recorded = [claimed["method"], claimed["target"], claimed["arguments_digest"], claimed["principal"]]
        if not all(value is None or type(value) is str for value in recorded):
            return _TAMPERED
        key.single.decrypt(nonce, blob[_NONCE:], _binding_aad(kid, recorded, TOKEN_VERSION))
    except (InvalidTag, ValueError, TypeError, KeyError, UnicodeDecodeError):  # not ours as it stands
        return _TAMPERED
    why = _mismatch(recorded, binding)
    # None: the token is ours and names this binding, yet did not open under it (a comparison
    # gone wrong); the layer under the binding refused it all the same.
    return why if why is not None else "inner authentication failed for this binding"


def _open_v1(key: Key, kid: str, blob: bytes, binding: StateBinding) -> bytes:
    """The payload of a v1 token (two layers), sealed before v2; every failure as before."""
    try:
        plain = key.outer.decrypt(blob[:_NONCE], blob[_NONCE:], _header_aad(kid))
    except InvalidTag:
        raise InvalidRequestState(_TAMPERED) from None
    recorded, inner = _split_outer(plain)
    why = _mismatch(recorded, binding)
    if why is not None:
        raise InvalidRequestState(why)
    try:
        return key.inner.decrypt(inner[:_NONCE], inner[_NONCE:], _binding_aad(kid, binding._fields()))
    except InvalidTag:
        raise InvalidRequestState("inner authentication failed for this binding") from None


def _strings_json(values: list[str | None]) -> bytes:
    """:func:`canonical_json` of a list of strings and None (no number, so no NaN to refuse):
    orjson's bytes, or the careful path for what orjson refuses (lone surrogates)."""
    try:
        return orjson.dumps(values)
    except TypeError:
        return canonical_json(values)


def _payload_json(stamped: dict[str, Any]) -> bytes:
    """:func:`canonical_json` of a stamped payload. Only ``answers`` and ``app`` hold values the
    codec did not make itself, so only they are searched for NaN and infinities (which orjson
    would write as null)."""
    try:
        fast = orjson.dumps(stamped, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return canonical_json(stamped)
    # Every NaN or infinity adds a ``null`` to the bytes, as does each None the codec wrote (the
    # principal, the app). As many as those, and there is none: no walk of the answers needed
    # (more, say a real null in an answer or "null" inside a string, and the walk decides).
    nulls = (stamped["principal"] is None) + (stamped["app"] is None)
    if fast.count(b"null") == nulls or (_finite(stamped["answers"]) and _finite(stamped["app"])):
        return fast
    return canonical_json(stamped)  # raises: NaN and infinities are not JSON


_PAYLOAD_FIELDS = frozenset(SealedState.model_fields)
# The fields whose type is one exact type in the strict model, and those types.
_TYPED = operator.itemgetter(
    "version", "exp", "round", "method", "target", "arguments_digest", "nonce", "questions", "answers"
)
_TYPES = (int, int, int, str, str, str, str, dict, dict)


def _fast_payload(body: bytes) -> SealedState | None:
    """The payload, when ``body`` has exactly the shape :meth:`AeadStateCodec.seal` writes and
    every value has the type the strict model demands; None for anything else, which the
    strict model then judges (so this only ever accepts what it would accept)."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if type(data) is not dict or data.keys() != _PAYLOAD_FIELDS or tuple(map(type, _TYPED(data))) != _TYPES:
        return None  # (the types compared in one step: exactly these, so no bool for an int)
    questions, principal = data["questions"], data["principal"]
    if data["round"] < 0 or (principal is not None and type(principal) is not str):
        return None
    if not data["answers"].keys() <= questions.keys():
        return None
    for value in questions.values():
        if type(value) is not str:
            return None
    return _construct(data)


_construct = constructor(
    SealedState,
    {
        "version": PAYLOAD_VERSION,
        "method": "tools/call",
        "target": "t",
        "arguments_digest": "d",
        "principal": None,
        "exp": 1,
        "round": 1,
        "nonce": "n",
        "questions": {"q1": "f"},
        "answers": {"q1": {"action": "accept"}},
        "app": None,
    },
)


def _split_outer(plain: bytes) -> tuple[list[Any], bytes]:
    """The recorded binding and inner blob; authenticated bytes, so a bad shape is our bug."""
    try:
        (size,) = _LEN.unpack_from(plain)
        raw = plain[_LEN.size : _LEN.size + size]
        try:
            recorded = orjson.loads(raw)
        except orjson.JSONDecodeError:  # lone surrogates (written with surrogatepass): the stdlib reads them
            recorded = json.loads(raw)
        inner = plain[_LEN.size + size :]
        if not isinstance(recorded, list) or len(recorded) != 4 or len(inner) < _MIN_BLOB:
            raise ValueError("bad envelope")
    except (struct.error, ValueError):
        raise InvalidRequestState("malformed envelope") from None
    return recorded, inner


def _preview(value: object, limit: int = 40) -> str:
    """A log-safe, bounded rendering of a (possibly hostile) string."""
    text = value if isinstance(value, str) else str(value)
    return repr(text[:limit]) + ("…" if len(text) > limit else "")


def default_codec() -> StateCodec:
    """Sealing under :func:`~elicitkit.server.rounds.keys.load_keyring`'s keys (shared or fresh)."""
    return AeadStateCodec(load_keyring())


def construct_state(round_no: int, questions: dict[str, str], answers: dict[str, Any], app: Any) -> SealedState:
    """An unstamped payload from a round's own values (``answers`` keyed by asked questions, as
    the model's validator demands: the caller checks that), built without validation."""
    return _construct(
        {
            "version": PAYLOAD_VERSION,
            "method": "",
            "target": "",
            "arguments_digest": "",
            "principal": None,
            "exp": 0,
            "round": round_no,
            "nonce": "",
            "questions": questions,
            "answers": answers,
            "app": app,
        }
    )
