"""Sealed requestState: round trips, and every way of opening one fails closed with one message."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pytest
from pydantic import ValidationError

from elicitkit.protocol.errors import INVALID_PARAMS
from elicitkit.server.rounds import sealing as rs
from elicitkit.server.rounds.keys import KeyRing, KeyRingError
from elicitkit.server.rounds.sealing import (
    PUBLIC_MESSAGE,
    AeadStateCodec,
    InvalidRequestState,
    SealedState,
    StateBinding,
    StateCodec,
    digest_arguments,
    fingerprint_question,
)

NOW = 1_800_000_000.0
ARGS = {"date": "2025-12-25", "party_size": 2}
QUESTION = {"method": "elicitation/create", "params": {"message": "Another date?", "requestedSchema": {}}}


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def ring() -> KeyRing:
    return KeyRing.generate()


@pytest.fixture
def codec(ring: KeyRing, clock: Clock) -> AeadStateCodec:
    return AeadStateCodec(ring, clock=clock)


def bind(
    method: str = "tools/call",
    target: str = "book_table",
    arguments: dict[str, Any] | None = None,
    principal: str | None = "alice",
) -> StateBinding:
    return StateBinding(method, target, digest_arguments(ARGS if arguments is None else arguments), principal)


def payload(**fields: Any) -> SealedState:
    base: dict[str, Any] = {
        "round": 1,
        "questions": {"date": fingerprint_question(QUESTION)},
        "answers": {"date": {"action": "accept", "content": {"date": "2025-12-26"}}},
        "app": {"step": "confirm", "note": "café ☕", "n": [1, 1.5, None, True]},
    }
    base.update(fields)
    return SealedState(**base)


def rejected(codec: AeadStateCodec, token: object, binding: StateBinding | None = None) -> str:
    """Open must fail with the frozen public message; return the log reason."""
    with pytest.raises(InvalidRequestState) as info:
        codec.open(token, binding or bind())
    exc = info.value
    assert exc.public_message == PUBLIC_MESSAGE
    assert str(exc) == PUBLIC_MESSAGE
    assert exc.__cause__ is None and (exc.__context__ is None or exc.__suppress_context__)
    return exc.reason


def split(token: str) -> tuple[str, str, bytes]:
    version, kid, data = token.split(".")
    return version, kid, base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))


def join(version: str, kid: str, blob: bytes) -> str:
    return f"{version}.{kid}.{base64.urlsafe_b64encode(blob).rstrip(b'=').decode()}"


# -- round trip ---------------------------------------------------------------------------


def test_round_trip_stamps_binding_expiry_and_nonce(codec: AeadStateCodec, ring: KeyRing) -> None:
    original = payload(method="ignored", exp=5, nonce="ignored")
    token = codec.seal(original, bind())
    opened = codec.open(token, bind())
    assert (opened.round, opened.questions, opened.answers, opened.app) == (
        original.round,
        original.questions,
        original.answers,
        original.app,
    )
    assert opened.binding == bind()
    assert opened.version == 1
    assert opened.exp == int(NOW) + 600
    assert opened.nonce and opened.nonce != "ignored"
    assert opened.answer_matches("date", QUESTION)
    assert not opened.answer_matches("date", {**QUESTION, "params": {"message": "Other?"}})
    assert not opened.answer_matches("missing", QUESTION)
    version, kid, _ = token.split(".")
    assert (version, kid) == ("v2", ring.sealing_key_id)
    assert "=" not in token and "+" not in token and "/" not in token


def test_anonymous_and_minimal_payload(codec: AeadStateCodec) -> None:
    binding = bind(principal=None, arguments={})
    assert codec.open(codec.seal(SealedState(), binding), binding).app is None


def test_token_changes_every_seal(codec: AeadStateCodec) -> None:
    tokens = {codec.seal(payload(), bind()) for _ in range(20)}
    assert len(tokens) == 20
    nonces = {codec.open(t, bind()).nonce for t in tokens}
    assert len(nonces) == 20


def test_codec_is_a_state_codec(codec: AeadStateCodec) -> None:
    assert isinstance(codec, StateCodec)


def test_per_seal_ttl_and_expiry(codec: AeadStateCodec, clock: Clock) -> None:
    token = codec.seal(payload(), bind())
    long_token = codec.seal(payload(), bind(), ttl_seconds=3600)
    clock.now = NOW + 599
    codec.open(token, bind())
    clock.now = NOW + 600
    assert rejected(codec, token).startswith("expired 0s ago")
    clock.now = NOW + 700
    assert rejected(codec, token) == "expired 100s ago"
    assert codec.open(long_token, bind()).exp == int(NOW) + 3600


# -- one exception, one public message, distinct reasons -----------------------------------


def test_failures_share_the_public_message_and_have_distinct_reasons(codec: AeadStateCodec, clock: Clock) -> None:
    token = codec.seal(payload(), bind())
    other_ring_token = AeadStateCodec(KeyRing.generate(), clock=clock).seal(payload(), bind())
    cases: dict[str, tuple[object, StateBinding]] = {
        "not a string": (42, bind()),
        "oversized": ("v1." + "A" * 70_000, bind()),
        "bad prefix": ("v9" + token[2:], bind()),
        "unknown key id": (other_ring_token, bind()),
        "bad base64url": (token + "!", bind()),
        "truncated": (token[: token.rindex(".") + 37], bind()),
        "authentication failed": (join(*_flip(split(token), 40)), bind()),
        "another method": (token, bind(method="prompts/get")),
        "another target": (token, bind(target="cancel_booking")),
        "other arguments": (token, bind(arguments={**ARGS, "party_size": 20})),
        "another principal": (token, bind(principal="mallory")),
    }
    reasons = {name: rejected(codec, tok, b) for name, (tok, b) in cases.items()}
    clock.now = NOW + 10_000
    reasons["expired"] = rejected(codec, token)
    for name, reason in reasons.items():
        assert name in reason, (name, reason)
    assert len(set(reasons.values())) == len(reasons)


def test_to_mcp_error_leaks_nothing(codec: AeadStateCodec) -> None:
    with pytest.raises(InvalidRequestState) as info:
        codec.open(codec.seal(payload(), bind()), bind(target="other"))
    error = info.value.to_mcp_error()
    assert (error.code, error.message, error.data) == (INVALID_PARAMS, PUBLIC_MESSAGE, None)
    assert error.to_error() == {"code": -32602, "message": PUBLIC_MESSAGE}
    assert "target" in repr(info.value)


# -- tampering ----------------------------------------------------------------------------


def _flip(parts: tuple[str, str, bytes], index: int) -> tuple[str, str, bytes]:
    version, kid, blob = parts
    flipped = bytearray(blob)
    flipped[index] ^= 0x01
    return version, kid, bytes(flipped)


def test_flipping_any_byte_of_the_sealed_data_fails_authentication(codec: AeadStateCodec) -> None:
    parts = split(codec.seal(payload(), bind()))
    for index in range(len(parts[2])):
        assert rejected(codec, join(*_flip(parts, index))).startswith("authentication failed"), index


def test_changing_any_character_of_the_token_fails(codec: AeadStateCodec) -> None:
    token = codec.seal(payload(), bind())
    for index, char in enumerate(token):
        for other in {"A" if char != "A" else "B", ".", "="}:
            if other != char:
                rejected(codec, token[:index] + other + token[index + 1 :])


def test_appended_suffix_is_rejected(codec: AeadStateCodec) -> None:
    token = codec.seal(payload(), bind())
    for suffix in ("-TAMPERED", "A", "AA", "AAA", "AAAA", " ", "\n"):
        reason = rejected(codec, token + suffix)
        assert reason.startswith(("bad base64url", "authentication failed")), (suffix, reason)


def test_non_canonical_base64_is_rejected(codec: AeadStateCodec) -> None:
    """Unused low bits in the last character must not give a second spelling of one token."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    sizes = (codec.seal(payload(app="x" * n), bind()) for n in range(3))
    token = next(t for t in sizes if len(t.rsplit(".", 1)[1]) % 4)  # a length whose last character has spare bits
    assert codec.open(token, bind())
    last = alphabet.index(token[-1])
    sibling = token[:-1] + alphabet[last ^ 1]
    assert rejected(codec, sibling) == "bad base64url data"


def test_truncation_anywhere_is_rejected(codec: AeadStateCodec) -> None:
    token = codec.seal(payload(), bind())
    data_start = token.rindex(".") + 1
    for cut in (data_start + 36, data_start + 4, data_start):  # whole base64 quanta, under 28 bytes
        assert rejected(codec, token[:cut]).startswith("truncated")
    for cut in range(1, 9):
        assert rejected(codec, token[:-cut]).startswith(("bad base64url", "authentication failed"))
    for cut in range(data_start):
        rejected(codec, token[:cut])


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "v1",
        "v1.",
        "v1..",
        "v1...",
        "hello",
        "v1.AAAAAAAA",
        "v1.AAAAAAAA.",
        "V1.AAAAAAAA.AAAA",
        "v1.AAAAAAAA.AAAA.AAAA",
        "💥",
        "v1.💥.💥",
        "\x00" * 64,
        "null",
        '{"round": 1}',
    ],
)
def test_garbage_strings(codec: AeadStateCodec, garbage: str) -> None:
    rejected(codec, garbage)


def test_garbage_around_a_valid_token(codec: AeadStateCodec, ring: KeyRing) -> None:
    token = codec.seal(payload(), bind())
    assert rejected(codec, " " + token).startswith("bad prefix")
    assert rejected(codec, f"v1.{ring.sealing_key_id}.").startswith("truncated")
    assert rejected(codec, f"v1.{ring.sealing_key_id}.AAAA").startswith("truncated")
    assert rejected(codec, f"v1.{ring.sealing_key_id}.{'A' * 100}").startswith("authentication failed")
    assert rejected(codec, f"v1.{ring.sealing_key_id}.{'A' * 97}") == "bad base64url data"


@pytest.mark.parametrize("value", [None, 1, 1.5, True, b"v1.x.y", ["v1"], {"requestState": "x"}])
def test_non_string_input(codec: AeadStateCodec, value: object) -> None:
    assert rejected(codec, value) == f"not a string ({type(value).__name__})"


def test_oversized_is_refused_before_parsing(codec: AeadStateCodec) -> None:
    token = codec.seal(payload(), bind())
    assert rejected(codec, token + "A" * (64 * 1024)).startswith("oversized")
    small = AeadStateCodec(codec.keyring, max_token_chars=len(token) - 1)
    assert rejected(small, token).startswith("oversized")


def test_seal_refuses_what_open_would_refuse(codec: AeadStateCodec) -> None:
    with pytest.raises(ValueError, match="over the 65536 limit"):
        codec.seal(payload(app="x" * 70_000), bind())
    with pytest.raises(ValueError, match="only JSON values"):
        codec.seal(payload(app={"when": object()}), bind())
    with pytest.raises(ValueError, match="only JSON values"):
        codec.seal(payload(app=float("nan")), bind())


@pytest.mark.parametrize("principal", [None, "alice", "null"])
@pytest.mark.parametrize("app", [None, {"n": None}, "null"])
def test_seal_finds_nan_and_infinity_wherever_the_nulls_are(codec: AeadStateCodec, principal: Any, app: Any) -> None:
    # The seal counts the nulls it wrote itself (principal, app) instead of walking the answers:
    # a NaN or an infinity in an answer is still refused, with or without other nulls around it.
    for bad in (float("nan"), float("inf"), -float("inf")):
        answers = {"date": {"action": "accept", "content": {"n": bad}}}
        with pytest.raises(ValueError, match="only JSON values"):
            codec.seal(payload(answers=answers, app=app), bind(principal=principal))
    fine = {"date": {"action": "accept", "content": {"n": None, "s": "null"}}}
    token = codec.seal(payload(answers=fine, app=app), bind(principal=principal))
    opened = codec.open(token, bind(principal=principal))
    assert opened.answers == fine and opened.app == app and opened.principal == principal


# -- binding ------------------------------------------------------------------------------


def test_replay_against_another_request(codec: AeadStateCodec) -> None:
    token = codec.seal(payload(), bind())
    assert rejected(codec, token, bind(target="cancel_booking")) == (
        "replayed against another target (sealed for 'book_table', got 'cancel_booking')"
    )
    assert rejected(codec, token, bind(method="prompts/get")).startswith("replayed against another method")
    assert rejected(codec, token, bind(arguments={"party_size": 2})).startswith("replayed with other arguments")
    assert rejected(codec, token, bind(arguments={**ARGS, "party_size": 2.0})).startswith(
        "replayed with other arguments"
    )
    assert rejected(codec, token, bind(principal="mallory")) == "replayed by another principal"
    assert rejected(codec, token, bind(principal=None)) == "replayed without a principal (sealed for one)"
    anonymous = codec.seal(payload(), bind(principal=None))
    assert rejected(codec, anonymous, bind()) == "replayed by a principal (sealed without one)"
    assert codec.open(anonymous, bind(principal=None)).principal is None


def test_binding_is_also_enforced_cryptographically(codec: AeadStateCodec, monkeypatch: pytest.MonkeyPatch) -> None:
    """Even if the recorded-binding comparison were broken, the inner layer refuses another binding."""
    token = codec.seal(payload(), bind())
    monkeypatch.setattr(rs, "_mismatch", lambda recorded, expected: None)
    for other in (bind(target="x"), bind(method="prompts/get"), bind(arguments={}), bind(principal="bob")):
        assert rejected(codec, token, other) == "inner authentication failed for this binding"
    assert codec.open(token, bind()).round == 1


def test_binding_for_request() -> None:
    params = {"name": "book_table", "arguments": ARGS, "_meta": {"progressToken": 1}, "requestState": "x"}
    binding = StateBinding.for_request("tools/call", params, "alice")
    assert binding == bind()
    retry = {**params, "inputResponses": {"date": {"action": "accept"}}, "_meta": {}, "requestState": "y"}
    assert StateBinding.for_request("tools/call", retry, "alice") == binding
    assert StateBinding.for_request("prompts/get", {"name": "p"}).arguments_digest == digest_arguments({})
    uri = StateBinding.for_request("resources/read", {"uri": "file:///a", "_meta": {}, "requestState": "s"})
    assert (uri.target, uri.arguments_digest) == ("file:///a", digest_arguments({}))
    with pytest.raises(ValueError, match="cannot carry requestState"):
        StateBinding.for_request("tools/list", {})
    with pytest.raises(ValueError, match="string 'name'"):
        StateBinding.for_request("tools/call", {"name": 3})
    with pytest.raises(ValueError, match="must be an object"):
        StateBinding.for_request("tools/call", {"name": "t", "arguments": [1]})


# -- keys and rotation --------------------------------------------------------------------


def test_foreign_key_under_a_known_id_fails_authentication(ring: KeyRing, clock: Clock) -> None:
    ours = AeadStateCodec(ring, clock=clock)
    theirs = AeadStateCodec(KeyRing.generate(), clock=clock)
    _, _, blob = split(theirs.seal(payload(), bind()))
    forged = join("v2", ring.sealing_key_id, blob)
    assert rejected(ours, forged).startswith("authentication failed")


def test_unknown_key_id(codec: AeadStateCodec) -> None:
    token = codec.seal(payload(), bind())
    _, _, data = token.split(".")
    assert rejected(codec, f"v1.ZZZZZZZZ.{data}") == "unknown key id 'ZZZZZZZZ'"
    assert rejected(codec, f"v1.{'k' * 100}.{data}") == f"unknown key id {'k' * 40!r}…"


def test_rotation_keeps_old_rounds_and_seals_with_the_new_key(clock: Clock) -> None:
    old_secret, new_secret = KeyRing.generate_secret(), KeyRing.generate_secret()
    old_ring = KeyRing.from_secrets([old_secret])
    rotated = KeyRing.from_secrets([new_secret, old_secret])
    new_only = KeyRing.from_secrets([new_secret])
    old_token = AeadStateCodec(old_ring, clock=clock).seal(payload(), bind())
    codec = AeadStateCodec(rotated, clock=clock)
    assert codec.open(old_token, bind()).round == 1
    new_token = codec.seal(payload(round=2), bind())
    assert new_token.split(".")[1] == rotated.sealing_key_id == new_only.sealing_key_id
    assert rotated.key_ids == (new_only.sealing_key_id, old_ring.sealing_key_id)
    assert AeadStateCodec(new_only, clock=clock).open(new_token, bind()).round == 2
    assert rejected(AeadStateCodec(new_only, clock=clock), old_token).startswith("unknown key id")


def test_from_secrets_accepts_raw_bytes_and_base64url_text() -> None:
    raw = bytes(range(32))
    text = base64.urlsafe_b64encode(raw).decode()
    assert text.endswith("=")
    kids = {KeyRing.from_secrets([k]).sealing_key_id for k in (raw, text, text.rstrip("="), f"  {text}  ".strip())}
    assert len(kids) == 1
    assert len(next(iter(kids))) == 8


def test_from_env(clock: Clock) -> None:
    first, second = KeyRing.generate_secret(), KeyRing.generate_secret()
    ring = KeyRing.from_env(environ={"ELICITKIT_STATE_KEYS": f" {first} , {second}= "})
    assert ring.key_ids == (
        KeyRing.from_secrets([first]).sealing_key_id,
        KeyRing.from_secrets([second]).sealing_key_id,
    )
    other = KeyRing.from_env("MY_KEYS", environ={"MY_KEYS": first})
    token = AeadStateCodec(other, clock=clock).seal(payload(), bind())
    assert AeadStateCodec(ring, clock=clock).open(token, bind()).round == 1


def test_from_env_reads_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = KeyRing.generate_secret()
    monkeypatch.setenv("ELICITKIT_STATE_KEYS", secret)
    assert KeyRing.from_env().sealing_key_id == KeyRing.from_secrets([secret]).sealing_key_id


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "ELICITKIT_STATE_KEYS is not set"),
        ("   ", "ELICITKIT_STATE_KEYS is not set"),
        ("not base64!!", "key 1 is not base64url text"),
        ("{good},", "key 2 is empty"),
        ("{good},,{good2}", "key 2 is empty"),
        ("{good},c2hvcnQ", "key 2 decodes to 5 bytes, expected 32"),
        ("{good}AAAA", "key 1 decodes to 35 bytes, expected 32"),
        ("{good},{good}", "the same key appears twice"),
        ("{std}", "key 1 is not base64url text"),
    ],
)
def test_from_env_malformed(value: str | None, message: str) -> None:
    good, good2 = KeyRing.generate_secret(), KeyRing.generate_secret()
    std = base64.b64encode(b"\xfb" * 32).decode()  # '+' and '/': standard base64, not base64url
    environ = {} if value is None else {"ELICITKIT_STATE_KEYS": value.format(good=good, good2=good2, std=std)}
    with pytest.raises(KeyRingError, match=message) as info:
        KeyRing.from_env(environ=environ)
    assert isinstance(info.value, ValueError)
    assert good not in str(info.value) and good2 not in str(info.value)


def test_key_ring_constructor_errors() -> None:
    with pytest.raises(KeyRingError, match="at least one key"):
        KeyRing([])
    with pytest.raises(KeyRingError, match="no keys given"):
        KeyRing.from_secrets([])
    with pytest.raises(KeyRingError, match="key 1 must be 32 raw bytes"):
        KeyRing([b"short"])
    with pytest.raises(KeyRingError, match="key 1 is 31 raw bytes"):
        KeyRing.from_secrets([b"x" * 31])
    with pytest.raises(KeyRingError, match="key 2 is a int"):
        KeyRing.from_secrets([b"x" * 32, 7])  # type: ignore[list-item]


def test_key_material_never_shows(ring: KeyRing) -> None:
    secret = KeyRing.generate_secret()
    keyring = KeyRing.from_secrets([secret, bytes(range(32))])
    text = repr(keyring) + str(keyring) + repr(keyring._sealing())
    assert secret not in text and repr(bytes(range(32))) not in text
    assert text.startswith("KeyRing(key_ids=[")
    assert len(keyring) == 2 and len(ring) == 1
    assert not hasattr(keyring._sealing(), "__dict__")


def test_codec_rejects_non_positive_ttl(ring: KeyRing) -> None:
    with pytest.raises(ValueError, match="positive"):
        AeadStateCodec(ring, ttl_seconds=0)


# -- payload model ------------------------------------------------------------------------


def test_answers_must_be_pinned_to_questions() -> None:
    with pytest.raises(ValidationError, match="answers without a question"):
        SealedState(answers={"date": {"action": "accept"}})
    with pytest.raises(ValidationError):
        SealedState(round=-1)
    with pytest.raises(ValidationError):
        SealedState(round=True)
    assert SealedState(questions={"q": "x"}).answers == {}


def test_fingerprint_question_is_short_and_canonical() -> None:
    swapped = {"params": QUESTION["params"], "method": QUESTION["method"]}
    assert fingerprint_question(QUESTION) == fingerprint_question(swapped)
    assert len(fingerprint_question(QUESTION)) == 22
    assert fingerprint_question({"message": "a"}) != fingerprint_question({"message": "b"})


# -- digest_arguments ---------------------------------------------------------------------


def test_digest_is_order_independent() -> None:
    a = {"x": 1, "y": {"b": [1, {"d": 1, "c": 2}], "a": None}}
    b = {"y": {"a": None, "b": [1, {"c": 2, "d": 1}]}, "x": 1}
    assert digest_arguments(a) == digest_arguments(b)
    assert digest_arguments({"l": [1, 2]}) != digest_arguments({"l": [2, 1]})


def test_digest_distinguishes_json_types() -> None:
    digests = {digest_arguments({"v": value}) for value in (1, 1.0, "1", True, None, [1], {"1": 1})}
    assert len(digests) == 7
    assert digest_arguments({"v": 0}) != digest_arguments({"v": False})


def test_digest_is_the_documented_canonical_form() -> None:
    expected = hashlib.sha256('{"a":"é ☕","b":[1,2.5]}'.encode()).hexdigest()
    assert digest_arguments({"b": [1, 2.5], "a": "é ☕"}) == expected
    assert digest_arguments(None) == digest_arguments({}) == hashlib.sha256(b"{}").hexdigest()


def test_digest_ignores_per_round_params_and_survives_hostile_strings() -> None:
    assert digest_arguments({**ARGS, "_meta": {"p": 1}, "inputResponses": {}, "requestState": "s"}) == (
        digest_arguments(ARGS)
    )
    assert digest_arguments({"v": "\ud800"}) != digest_arguments({"v": "\ud801"})
    with pytest.raises(ValueError):
        digest_arguments({"v": float("nan")})


# ----------------------------------------------------------------------------- single-use rounds (issue 12 #19)


def test_defect_19_a_state_replays_within_its_ttl_by_default(codec: AeadStateCodec) -> None:
    token = codec.seal(SealedState(round=1), bind())
    assert codec.open(token, bind()).round == 1
    assert codec.open(token, bind()).round == 1  # the spec allows it: documented next to the replay contract


def test_defect_19_single_use_rounds_open_each_state_once(ring: KeyRing, clock: Clock) -> None:
    spent = rs.SpentStates(clock=clock)
    codec = AeadStateCodec(ring, clock=clock, spent=spent)
    first = codec.seal(SealedState(round=1), bind())
    second = codec.seal(SealedState(round=1), bind())  # same payload, its own nonce
    assert codec.open(first, bind()).round == 1
    with pytest.raises(InvalidRequestState) as refused:
        codec.open(first, bind())
    assert refused.value.reason == "already used (single-use rounds)"
    assert str(refused.value) == PUBLIC_MESSAGE  # the client learns nothing more than for any bad state
    assert codec.open(second, bind()).round == 1
    assert len(spent) == 2


def test_a_refused_state_is_not_spent(ring: KeyRing, clock: Clock) -> None:
    """A state opened for the wrong binding (or expired) does not use up its one opening."""
    codec = AeadStateCodec(ring, clock=clock, spent=rs.SpentStates(clock=clock))
    token = codec.seal(SealedState(round=1), bind())
    with pytest.raises(InvalidRequestState):
        codec.open(token, bind(principal="mallory"))
    assert codec.open(token, bind()).round == 1


def test_spent_states_are_forgotten_once_they_would_have_expired(clock: Clock) -> None:
    spent = rs.SpentStates(clock=clock)
    for i in range(1100):
        assert spent.claim(f"n{i}", int(NOW) + 10)
    assert not spent.claim("n0", int(NOW) + 10)
    clock.now += 11
    assert spent.claim("fresh", int(NOW) + 100)
    assert len(spent) == 1


# -- token versions -----------------------------------------------------------------------

# A v1 token (two AES-GCM layers) as sealed before v2, by the code of 52d1a3d, for tools/call
# book_table {"party_size": 4} by alice at NOW (expiring 600 s later), under the master key
# b"\x07" * 32: a round in flight across an upgrade still opens.
V1_KEY = b"\x07" * 32
V1_TOKEN = (
    "v1.2BBNmvu6.JzsP5c5t_vvktl1WhKe8ewqmoU2iRAbNr4AuGMSgDG5EGmIHI7qbubi5iVQ6qFWcH97PA92Gb0yNnEK2LrOcUmfZgflc6Yu"
    "kT2HkuyLpk2E87yhhJ4nfDa157efpWpzwC-9OC55FmB_rcVEcHKFE2FGQU10Y2qLYPESg-pakGWhl7A7bU4mpSWRmh9yZHme2CetPGgBGhj"
    "nyeGh5dTt4IGFwOddKRm20OTOKll6W3L1uJxZGY8aB8ucfgAPUT_GURSRT_psUU3waL02ypxCADgYXWnofeHAY2a0kQmlmHB5YVxPwCEu179"
    "p-c9vBml5hXlHEvxJ0OWJMAyM5BsXt9aJKHz_N4fJiZf5WVbV0Q025SyGtB2RRDRFgUo2Rc5X7dru-rfMOuugS_8RRuANLdL5K932LbjczIiw"
    "SblinByVYhlBmCFgn8vNKo_npHGyE_kK2VcvDz0g0NIboDJPeXbe-1hnv7CrPFoYm88OLDq_SlfD2KlptObf6irXjW3b155NKHRaBLWfYorXm"
    "C6G5IZSjg9m7qmdiaHDZzd4YOdzO7g4lrg1FnuKlQSj1ik7Tb0Sv5oEg4WaNWoyjYjpA38nt_zyUlR6pWmVkC4KNTf-y-uHBTqs5wmJoH-61e"
    "2k3T1I0dmXD7BepZJraZE7QDxedxG15stD3-ILIrVDJdQbQVdh0Jy8EizY"
)
V1_QUESTION = {"method": "elicitation/create", "params": {"message": "Which date?"}}


def _v1_binding(**changes: Any) -> StateBinding:
    fields: dict[str, Any] = {
        "method": "tools/call",
        "target": "book_table",
        "arguments": {"party_size": 4},
        "principal": "alice",
    }
    fields.update(changes)
    return bind(**fields)


def test_a_v1_token_sealed_before_the_upgrade_still_opens(clock: Clock) -> None:
    codec = AeadStateCodec(KeyRing.from_secrets([V1_KEY]), clock=clock)
    opened = codec.open(V1_TOKEN, _v1_binding())
    assert (opened.round, opened.principal, opened.app, opened.exp) == (1, "alice", {"step": "confirm"}, NOW + 600)
    assert opened.answer_matches("date", V1_QUESTION)
    assert opened.answers["date"] == {"action": "accept", "content": {"date": "2025-12-26"}}
    # and refuses as it did: another request, the outer or the inner layer changed, expired
    assert rejected(codec, V1_TOKEN, _v1_binding(target="x")) == (
        "replayed against another target (sealed for 'book_table', got 'x')"
    )
    assert rejected(codec, V1_TOKEN, _v1_binding(principal="mallory")) == "replayed by another principal"
    parts = split(V1_TOKEN)
    for index in (0, 20, len(parts[2]) - 1):
        assert rejected(codec, join(*_flip(parts, index))).startswith("authentication failed"), index
    assert rejected(codec, "v2" + V1_TOKEN[2:], _v1_binding()).startswith("authentication failed")
    clock.now = NOW + 600
    assert rejected(codec, V1_TOKEN, _v1_binding()) == "expired 0s ago"


def test_a_v2_token_is_one_layer_under_the_binding(codec: AeadStateCodec, ring: KeyRing) -> None:
    """One AES-GCM layer (nonce, payload, tag): no second copy of the binding, no second layer;
    read as v1 (the version is authenticated) it does not open."""
    token = codec.seal(payload(), bind())
    version, kid, blob = split(token)
    key = ring._lookup(kid)
    assert version == "v2" and key is not None
    body = key.single.decrypt(blob[:12], blob[12:], rs._binding_aad(kid, bind()._fields(), "v2"))
    assert rs._fast_payload(body) == codec.open(token, bind())
    assert body.count(b"book_table") == 1
    assert rejected(codec, "v1" + token[2:]).startswith("authentication failed")


def test_a_v2_token_claiming_another_binding_is_only_believed_once_authenticated(
    codec: AeadStateCodec, ring: KeyRing
) -> None:
    """The failure path reads the binding without the tag; a token forged to claim one (the
    counter-mode bytes edited to spell another target) is refused as tampered, not as a replay."""
    token = codec.seal(payload(), bind())
    version, kid, blob = split(token)
    stream_edit = bytearray(blob)
    sealed_target = b'"target":"book_table"'
    key = ring._lookup(kid)
    assert key is not None
    plain = key.single.decrypt(blob[:12], blob[12:], rs._binding_aad(kid, bind()._fields(), "v2"))
    at = 12 + plain.index(sealed_target)
    for i, (old, new) in enumerate(zip(sealed_target, b'"target":"lose_table"', strict=True)):
        stream_edit[at + i] ^= old ^ new
    forged = join(version, kid, bytes(stream_edit))
    assert rejected(codec, forged, bind(target="lose_table")).startswith("authentication failed")
    assert rejected(codec, forged).startswith("authentication failed")
