"""Parked backend calls shared by a fleet of gateways: a host's retry on any instance continues
the backend call that waits on another.

A 2025 backend's question to a 2026 host parks the backend call on the instance that ran it
(:class:`~elicitkit.gateway.bridge.Parked`); the host's retry, behind a round-robin balancer,
lands anywhere. With a shared (Redis) backplane each parking is registered under the nonce the
round's sealed state carries (``gw:call:<nonce>`` -> the instance), and an instance that gets a
retry for a call it does not hold drives the holder's call remotely (:class:`RemoteCall`): it
asks the holder for the question the call waits on, puts it to its own host, and hands the
answer back; the holder answers the waiting backend question and replies with the next
question or the call's end. The backend's tool runs once, as it does for a retry that lands on
the holder.

The messages travel on Redis lists (``gw:in:<instance>``, and one reply list per step), sealed
under the fleet key and bound to the list they are pushed on, like every other message of the
fleet: Redis never sees a question, an answer or a result. A message older than 30 seconds is
dropped.

Failures, stated where they happen:

- the holder stopped (no heartbeat), before or during a step: the retry replays the backend
  call from the sealed state (:data:`HOLDER_GONE`), as a retry on a restarted gateway does;
- the holder no longer has the call (expired, finished, or taken by another retry): the same;
- Redis cannot be reached: the retry ends with :data:`STORE_UNREACHABLE` (the call, if its
  holder lives, stays parked there for the next retry), and a parking that cannot be registered
  ends the host's call with :data:`NOT_REGISTERED` and stops the backend call, rather than park
  it where no other instance could find it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from typing import TYPE_CHECKING, Any

import orjson

from elicitkit.elicitation.requests import InvalidRequest, parse_request
from elicitkit.protocol.errors import INTERNAL_ERROR, MCPError
from elicitkit.protocol.jsonrpc import JSON
from elicitkit.protocol.modern import ELICIT
from elicitkit.protocol.versions import MODERN_2026

if TYPE_CHECKING:
    from elicitkit.backplane.base import RedisPlace
    from elicitkit.gateway.bridge import BackendCall, Parked

__all__ = ["HOLDER_GONE", "NOT_REGISTERED", "STORE_UNREACHABLE", "CallRelay", "HolderGone", "RemoteCall"]

logger = logging.getLogger("elicitkit.gateway.fleet")

STORE_UNREACHABLE = (
    "the gateway fleet's shared store (Redis) is unreachable: the backend call this retry continues"
    " cannot be found now (it is not lost); try again"
)
NOT_REGISTERED = (
    "the gateway fleet's shared store (Redis) is unreachable: the backend call could not be kept"
    " for a retry on another instance, and was stopped; try again"
)
HOLDER_GONE = "the gateway instance holding the backend call stopped; the call is started again"
_WINDOW = 30.0  # seconds a message stays valid
_POLL = 1.0  # seconds between checks that the holder still lives, while a step waits
_MISSES = 2  # checks in a row without a heartbeat: the holder is gone


class HolderGone(Exception):  # a signal, caught by forward(), never raised to a caller
    """The instance holding a parked call stopped, or no longer has it: replay the call here."""


def _encode_answer(answer: JSON | BaseException) -> JSON:
    if isinstance(answer, MCPError):
        return {"error": answer.to_error()}
    if isinstance(answer, BaseException):
        return {"error": {"code": INTERNAL_ERROR, "message": str(answer) or type(answer).__name__}}
    return {"result": answer}


def _decode_answer(body: Any) -> JSON | BaseException:
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return MCPError.from_error(body["error"])
    if isinstance(body, dict) and isinstance(body.get("result"), dict):
        return dict(body["result"])
    return MCPError(INTERNAL_ERROR, "the gateway instance holding the call sent an answer it cannot read")


class CallRelay:
    """One instance's side of the shared parked calls: registers its parkings, serves steps asked
    by other instances, and asks steps of theirs (see the module docstring)."""

    def __init__(self, place: RedisPlace, instance_id: str, ttl: float) -> None:
        assert place.sealer is not None, "a shared backplane seals what it keeps in Redis"
        self.client = place.client
        self.sealer = place.sealer
        self.instance_id = instance_id
        self.ttl = ttl
        self._prefix = place.prefix.encode()
        self._inbox = self._in_key(instance_id)
        self._tg: Any = None  # the gateway's task group: serving, timers (set by the first parking)
        self._stepping: dict[str, BackendCall] = {}  # calls taken by a step now (a cancel finds them)
        self._seen: dict[str, float] = {}  # ids of recent messages (a replayed push is dropped)

    def _in_key(self, instance_id: str) -> bytes:
        return self._prefix + b"gw:in:" + instance_id.encode()

    def _call_key(self, nonce: str) -> bytes:
        return self._prefix + b"gw:call:" + nonce.encode()

    # -- the registry --------------------------------------------------------------------------

    async def register(self, nonce: str, parked: Parked, tg: Any) -> None:
        """This instance holds the call parked under ``nonce``; raises MCPError(NOT_REGISTERED)."""
        if self._tg is None:  # the first parking: from now on, other instances may ask for steps
            self._tg = tg
            tg.start_soon(self._serve_forever, parked)
        try:
            await self.client.set(self._call_key(nonce), self.instance_id.encode(), px=int(self.ttl * 1000))
        except Exception as exc:
            logger.warning("cannot register a parked call: %s", type(exc).__name__)
            raise MCPError(INTERNAL_ERROR, NOT_REGISTERED) from None

    async def holder(self, nonce: str) -> str | None:
        """The live instance (not this one) that holds the call parked under ``nonce``, if any."""
        try:
            found = await self.client.get(self._call_key(nonce))
            if not isinstance(found, bytes) or found.decode() == self.instance_id:
                return None
            alive = await self.client.exists(self._prefix + b"inst:" + found)
        except Exception as exc:
            logger.warning("cannot look up a parked call: %s", type(exc).__name__)
            raise MCPError(INTERNAL_ERROR, STORE_UNREACHABLE) from None
        if not alive:
            logger.warning("%s (instance %s)", HOLDER_GONE, found.decode())
            return None
        return found.decode()

    def stopped(self) -> None:
        """The gateway stopped (its task group with the serving loop is gone): a next run starts it again."""
        self._tg = None
        self._stepping.clear()

    # -- asking another instance ------------------------------------------------------------------

    async def step(
        self, holder: str, nonce: str, answer: tuple[str, JSON | BaseException] | None, scope: Any = None
    ) -> JSON:
        """Hand ``holder`` the answer to its call's waiting question (``(key, answer)``, or None)
        and wait for the call's next question or end; the backend's progress and logs meanwhile
        go to ``scope`` (the host request here). Raises :class:`HolderGone`, or MCPError
        (STORE_UNREACHABLE) when Redis fails."""
        reply_key = self._prefix + b"gw:reply:" + secrets.token_hex(12).encode()
        message: JSON = {"op": "step", "nonce": nonce, "reply": reply_key.decode()}
        if answer is not None:
            message["key"], message["answer"] = answer[0], _encode_answer(answer[1])
        try:
            await self._push(self._in_key(holder), message)
            misses = 0
            while True:
                popped = await self.client.blpop([reply_key], timeout=_POLL)
                if popped is not None:
                    body = self._open(reply_key, popped[1])
                    if body is None:
                        continue
                    if body.get("gone"):
                        raise HolderGone
                    if "note" in body:
                        await _notify(scope, body["note"])
                        continue
                    return body
                alive = await self.client.exists(self._prefix + b"inst:" + holder.encode())
                misses = 0 if alive else misses + 1
                if misses >= _MISSES:
                    logger.warning("%s (instance %s, during a step)", HOLDER_GONE, holder)
                    raise HolderGone
        except (HolderGone, asyncio.CancelledError):
            raise
        except Exception as exc:
            logger.warning("a step of a call parked on %s failed: %s", holder, type(exc).__name__)
            raise MCPError(INTERNAL_ERROR, STORE_UNREACHABLE) from None

    async def cancel(self, holder: str, nonce: str) -> None:
        """Stop the call ``holder`` keeps under ``nonce`` (its host gave up): no reply awaited."""
        with contextlib.suppress(Exception):
            await self._push(self._in_key(holder), {"op": "cancel", "nonce": nonce})

    async def _push(self, key: bytes, message: JSON) -> None:
        body = {**message, "t": time.time(), "id": secrets.token_hex(8)}
        pipe = self.client.pipeline(transaction=False)  # one round trip
        pipe.rpush(key, self.sealer.seal(key, orjson.dumps(body)))
        pipe.pexpire(key, int(_WINDOW * 1000))
        await pipe.execute()

    def _open(self, key: bytes, sealed: bytes) -> JSON | None:
        opened = self.sealer.open(key, sealed)
        try:
            body = orjson.loads(opened) if opened is not None else None
        except orjson.JSONDecodeError:
            body = None
        now = time.time()
        if not isinstance(body, dict) or not isinstance(body.get("t"), float) or abs(now - body["t"]) > _WINDOW:
            logger.warning("dropped a gateway fleet message that does not open or is stale")
            return None
        ident = str(body.get("id"))
        if ident in self._seen:
            return None
        if len(self._seen) > 4096:
            self._seen = {k: t for k, t in self._seen.items() if now - t < _WINDOW}
        self._seen[ident] = now
        return body

    # -- serving the others' steps ---------------------------------------------------------------

    async def _serve_forever(self, parked: Parked) -> None:
        """Until the gateway stops (its task group is cancelled): each step in a task of its own."""
        while True:
            try:
                popped = await self.client.blpop([self._inbox], timeout=_POLL)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                logger.warning("gateway fleet inbox unreachable: %s", type(exc).__name__)
                await asyncio.sleep(0.5)
                continue
            body = self._open(self._inbox, popped[1]) if popped is not None else None
            if body is not None and isinstance(body.get("nonce"), str):
                self._tg.start_soon(self._handle, parked, body)

    async def _handle(self, parked: Parked, body: JSON) -> None:
        nonce: str = body["nonce"]
        if body.get("op") == "cancel":
            call = parked.take(nonce) or self._stepping.get(nonce)
            if call is not None:
                call.cancel()
            return
        call = parked.take(nonce)
        reply = body.get("reply")
        if not isinstance(reply, str) or not reply.startswith(self._prefix.decode() + "gw:reply:"):
            if call is not None:
                parked.park(nonce, call, self._tg)
            return
        if call is None:
            out: JSON = {"gone": True}
        else:
            self._stepping[nonce] = call
            call.scope = _Relayed(self, reply.encode())  # type: ignore[assignment]  # progress, logs
            try:
                out = await self._advance(parked, nonce, call, body)
            finally:
                call.scope = None
                self._stepping.pop(nonce, None)
        try:
            await self._push(reply.encode(), out)
        except Exception as exc:
            logger.warning("cannot reply to a step: %s", type(exc).__name__)

    async def _advance(self, parked: Parked, nonce: str, call: BackendCall, body: JSON) -> JSON:
        from elicitkit.gateway.bridge import Finished

        pending = call.pending
        key = body.get("key")
        if pending is not None and key is not None and pending.key == key:  # an old key: answered already
            call.answered(pending, _decode_answer(body.get("answer")))
        event = await call.next()
        if isinstance(event, Finished):
            if event.error is None:
                return {"end": {"result": event.result}}
            return {"end": _encode_answer(event.error)}
        parked.park(nonce, call, self._tg)  # waits for the next step, with a fresh timer
        with contextlib.suppress(MCPError):  # and as long in the registry (else: logged, found here only)
            await self.register(nonce, parked, self._tg)
        params = event.request.to_dict() if event.request is not None else event.params
        return {"question": {"method": event.method, "params": params, "key": event.key}}


class _Relayed:
    """What a call driven from another instance has for a host request: its progress and logs
    go back on the step's reply list (a 2026 host: no completion notices)."""

    protocol_version = MODERN_2026

    def __init__(self, relay: CallRelay, reply: bytes) -> None:
        self.relay = relay
        self.reply = reply

    async def _send(self, note: JSON) -> None:
        with contextlib.suppress(Exception):  # a lost notification never ends the call
            await self.relay._push(self.reply, {"note": note})

    async def report_progress(self, progress: float, total: float | None, message: str | None) -> None:
        await self._send({"progress": progress, "total": total, "message": message})

    async def log(self, level: str, data: Any, logger_name: str | None = None) -> None:
        await self._send({"log": level, "data": data, "logger": logger_name})


async def _notify(scope: Any, note: Any) -> None:
    """A relayed progress or log notification, to the host request here (what is not one is dropped)."""
    if scope is None or not isinstance(note, dict):
        return
    with contextlib.suppress(Exception):
        if isinstance(note.get("progress"), int | float):
            total = note.get("total") if isinstance(note.get("total"), int | float) else None
            message = note.get("message") if isinstance(note.get("message"), str) else None
            await scope.report_progress(note["progress"], total, message)
        elif isinstance(note.get("log"), str):
            name = note.get("logger") if isinstance(note.get("logger"), str) else None
            await scope.log(note["log"], note.get("data"), name)


class RemoteCall:
    """A backend call parked on another instance, driven from here (the bridge's loop sees a
    :class:`~elicitkit.gateway.bridge.BackendCall`)."""

    def __init__(self, relay: CallRelay, holder: str, nonce: str) -> None:
        self.relay = relay
        self.holder = holder
        self.nonce = nonce
        self.scope: Any = None
        self.finished = False
        self.pending: Any = None
        self._answer: tuple[str, JSON | BaseException] | None = None

    async def next(self) -> Any:
        from elicitkit.gateway.bridge import Finished, Question

        if self.pending is not None:
            return self.pending
        answer, self._answer = self._answer, None
        try:
            body = await self.relay.step(self.holder, self.nonce, answer, self.scope)
        except MCPError:
            self.finished = True  # Redis failed: the call stays parked on its holder, not cancelled
            raise
        question = body.get("question")
        if isinstance(question, dict):
            method = str(question.get("method"))
            raw = question.get("params")
            params: JSON = dict(raw) if isinstance(raw, dict) else {}
            request = None
            if method == ELICIT:
                try:
                    request = parse_request(params)
                except InvalidRequest as exc:
                    raise MCPError(INTERNAL_ERROR, f"the backend's question cannot be read: {exc}") from None
            self.pending = Question(method, params, request, key=str(question.get("key")))
            return self.pending
        self.finished = True
        end = _decode_answer(body.get("end"))
        return Finished(error=end) if isinstance(end, BaseException) else Finished(result=end)

    def answered(self, question: Any, answer: JSON | BaseException) -> None:
        self.pending = None
        self._answer = (question.key, answer)

    def cancel(self) -> None:
        if not self.finished:
            self.finished = True
            with contextlib.suppress(RuntimeError):
                task = asyncio.get_running_loop().create_task(self.relay.cancel(self.holder, self.nonce))
                _background.add(task)
                task.add_done_callback(_background.discard)


_background: set[asyncio.Task[None]] = set()
