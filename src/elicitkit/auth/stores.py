"""Where a person's OAuth tokens live between runs: the OS keyring, else a 0600 file.

A :class:`~elicitkit.auth.TokenStore` maps an opaque key (the flow builds it from the server's
resource and the issuer, so each server and authorization server has its own entry) to a JSON
object. :class:`KeyringTokenStore` keeps each entry in the OS keyring (the ``keyring`` library)
plus an index of the keys, since keyrings cannot list their entries; :class:`FileTokenStore`
keeps them in one JSON file readable by its owner only, written atomically (a crash leaves the
old file or the new one, never half of one). :func:`default_token_store` picks the keyring when
the machine has a usable one (a desktop session), else the file (servers, SSH, containers).

Nothing here logs or raises with a value: errors name the file or keyring and what to do.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio.to_thread

from elicitkit.auth.errors import TokenStoreError

__all__ = [
    "FileTokenStore",
    "KeyringTokenStore",
    "TokenStoreError",
    "default_token_file",
    "default_token_store",
]

logger = logging.getLogger("elicitkit.auth")

SERVICE = "elicitkit"
_INDEX = "__elicitkit_index__"  # the keyring entry that lists the others
_CHUNKS = "__elicitkit_chunks__"  # an entry kept in parts says how many
CHUNK = 1000  # characters per keyring entry at most (Windows' limit is 1280)
STORE_ENV = "ELICITKIT_TOKEN_STORE"  # "keyring" or "file": overrides the automatic choice


# ------------------------------------------------------------------------------ the file


def default_token_file() -> Path:
    """``$XDG_STATE_HOME/elicitkit/tokens.json``, else ``~/.local/state/elicitkit/tokens.json``."""
    state = os.environ.get("XDG_STATE_HOME")
    base = Path(state) if state and Path(state).is_absolute() else Path.home() / ".local" / "state"
    return base / "elicitkit" / "tokens.json"


class FileTokenStore:
    """Tokens in one JSON file only its owner can read (0600, in a 0700 directory), written atomically.

    A file that is not a JSON object is moved aside (``tokens.json.corrupt-N``, kept for the person
    to look at) and the store starts empty: the person signs in again, nothing is lost or overwritten.
    A file others could read is narrowed to 0600 when read. Writers in several processes take turns
    through a lock file, so two commands finishing at once keep both of their entries.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_token_file()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"FileTokenStore({str(self.path)!r})"

    async def load(self, key: str) -> dict[str, Any] | None:
        entries = await anyio.to_thread.run_sync(self._read_locked)
        value = entries.get(key)
        return value if isinstance(value, dict) else None

    async def save(self, key: str, value: dict[str, Any]) -> None:
        def update(entries: dict[str, Any]) -> None:
            entries[key] = value

        await anyio.to_thread.run_sync(self._update, update)

    async def delete(self, key: str) -> None:
        def update(entries: dict[str, Any]) -> None:
            entries.pop(key, None)

        await anyio.to_thread.run_sync(self._update, update)

    async def keys(self) -> list[str]:
        return sorted(await anyio.to_thread.run_sync(self._read_locked))

    # -- blocking helpers, run in a worker thread

    def _read_locked(self) -> dict[str, Any]:
        with self._locked(create=False):
            return self._read()

    def _update(self, change: Any) -> None:
        with self._locked(create=True):
            entries = self._read()
            change(entries)
            self._write(entries)

    @contextlib.contextmanager
    def _locked(self, *, create: bool) -> Iterator[None]:
        """This process's threads and other processes take turns (``fcntl`` where the OS has it)."""
        with self._lock:
            if create:
                self._make_directory()
            elif not self.path.parent.is_dir():
                yield
                return
            try:
                import fcntl
            except ImportError:  # Windows: one process at a time is all we promise there
                yield
                return
            lock_path = self.path.with_name(self.path.name + ".lock")
            try:
                fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            except OSError as exc:
                raise self._error("lock", exc) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)  # closing releases the lock

    def _make_directory(self) -> None:
        directory = self.path.parent
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            if directory.name == "elicitkit" and (directory.stat().st_mode & 0o077):
                directory.chmod(0o700)  # ours: nobody else needs to list it
        except OSError as exc:
            raise self._error("create the directory of", exc) from None

    def _read(self) -> dict[str, Any]:
        try:
            with open(self.path, "rb") as file:
                mode = os.fstat(file.fileno()).st_mode
                raw = file.read()
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise self._error("read", exc) from None
        if mode & 0o077:
            logger.warning("%s was readable by others; narrowing it to its owner (0600)", self.path)
            with contextlib.suppress(OSError):
                self.path.chmod(0o600)
        try:
            entries = json.loads(raw)
        except ValueError:
            entries = None
        if not isinstance(entries, dict):
            self._set_aside()
            return {}
        return entries

    def _set_aside(self) -> None:
        for n in range(1, 1000):
            aside = self.path.with_name(f"{self.path.name}.corrupt-{n}")
            if not aside.exists():
                break
        try:
            os.replace(self.path, aside)
        except OSError as exc:
            raise TokenStoreError(
                f"the token file {self.path} is not valid JSON and could not be moved aside "
                f"({exc.strerror or type(exc).__name__}); move or delete it, then sign in again"
            ) from None
        logger.warning("the token file %s was not valid JSON; kept it as %s and started afresh", self.path, aside)

    def _write(self, entries: dict[str, Any]) -> None:
        data = json.dumps(entries, indent=1, sort_keys=True).encode()
        directory = self.path.parent
        try:
            fd, temporary = tempfile.mkstemp(dir=directory, prefix=f".{self.path.name}.", suffix=".tmp")
        except OSError as exc:
            raise self._error("write", exc) from None
        try:
            with os.fdopen(fd, "wb") as file:  # mkstemp makes it 0600 already
                file.write(data)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise self._error("write", exc) from None
        with contextlib.suppress(OSError):  # the rename is durable once the directory is synced
            dir_fd = os.open(directory, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)

    def _error(self, verb: str, exc: OSError) -> TokenStoreError:
        reason = exc.strerror or type(exc).__name__
        return TokenStoreError(
            f"could not {verb} the token file {self.path} ({reason}); check its permissions, "
            f"or set ${STORE_ENV}=keyring or XDG_STATE_HOME to keep tokens elsewhere"
        )


# ------------------------------------------------------------------------------ the keyring


class KeyringTokenStore:
    """Each entry in the OS keyring under service ``elicitkit``; an index entry lists the keys.

    ``backend``: a ``keyring`` backend object (default: the one ``keyring`` chose for this machine).
    """

    def __init__(self, backend: Any = None, service: str = SERVICE) -> None:
        self._backend = backend
        self.service = service
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"KeyringTokenStore({type(self.backend).__name__})"

    @property
    def backend(self) -> Any:
        if self._backend is None:
            import keyring

            self._backend = keyring.get_keyring()
        return self._backend

    async def load(self, key: str) -> dict[str, Any] | None:
        raw = await anyio.to_thread.run_sync(self._fetch, key)
        if raw is None:
            return None
        try:
            value = json.loads(raw)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            logger.warning("the keyring entry for one server was not valid JSON; it is ignored until replaced")
            return None
        return value

    async def save(self, key: str, value: dict[str, Any]) -> None:
        await anyio.to_thread.run_sync(self._save, key, json.dumps(value, sort_keys=True))

    async def delete(self, key: str) -> None:
        await anyio.to_thread.run_sync(self._delete, key)

    async def keys(self) -> list[str]:
        return sorted(await anyio.to_thread.run_sync(self._index))

    # -- blocking helpers (keyrings talk to D-Bus, the macOS keychain, ...), run in a worker thread

    def _call(self, what: str, fn: Any, *args: Any) -> Any:
        from keyring.errors import KeyringError, PasswordDeleteError

        try:
            return fn(*args)
        except PasswordDeleteError:
            return None  # already gone
        except KeyringError as exc:
            raise TokenStoreError(
                f"the OS keyring ({type(self.backend).__name__}) refused to {what} ({type(exc).__name__}); "
                f"unlock it, or set {STORE_ENV}=file to keep tokens in a 0600 file instead"
            ) from None

    def _get(self, name: str) -> str | None:
        raw = self._call("read a token", self.backend.get_password, self.service, name)
        return raw if isinstance(raw, str) else None

    # An entry longer than CHUNK characters is kept in parts (Windows' Credential Manager holds
    # at most 2560 bytes of UTF-16 per entry, less than one JWT access token with its refresh
    # token): the entry itself then says how many parts follow, under "<name> #<i>".

    def _chunks_of(self, raw: str | None) -> int | None:
        if raw is None or not raw.startswith('{"' + _CHUNKS):
            return None
        try:
            header = json.loads(raw)
        except ValueError:
            return None
        count = header.get(_CHUNKS) if isinstance(header, dict) else None
        return count if isinstance(count, int) and not isinstance(count, bool) and 0 < count <= 1000 else None

    def _fetch(self, name: str) -> str | None:
        raw = self._get(name)
        count = self._chunks_of(raw)
        if count is None:
            return raw
        parts = [self._get(f"{name} #{i}") for i in range(count)]
        return None if any(part is None for part in parts) else "".join(part or "" for part in parts)

    def _put(self, name: str, data: str) -> None:
        before = self._chunks_of(self._get(name)) or 0
        if len(data) <= CHUNK:
            self._call("store a token", self.backend.set_password, self.service, name, data)
            count = 0
        else:
            parts = [data[i : i + CHUNK] for i in range(0, len(data), CHUNK)]
            for i, part in enumerate(parts):
                self._call("store a token", self.backend.set_password, self.service, f"{name} #{i}", part)
            header = json.dumps({_CHUNKS: len(parts)})
            self._call("store a token", self.backend.set_password, self.service, name, header)
            count = len(parts)
        for i in range(count, before):  # parts of a longer earlier value
            self._call("delete a token", self.backend.delete_password, self.service, f"{name} #{i}")

    def _remove(self, name: str) -> None:
        count = self._chunks_of(self._get(name)) or 0
        self._call("delete a token", self.backend.delete_password, self.service, name)
        for i in range(count):
            self._call("delete a token", self.backend.delete_password, self.service, f"{name} #{i}")

    def _index(self) -> list[str]:
        raw = self._fetch(_INDEX)
        try:
            keys = json.loads(raw) if raw else []
        except ValueError:
            keys = []
        return [k for k in keys if isinstance(k, str)] if isinstance(keys, list) else []

    def _save(self, key: str, data: str) -> None:
        if key == _INDEX:
            raise ValueError(f"{_INDEX!r} is reserved")
        with self._lock:
            self._put(key, data)
            keys = self._index()
            if key not in keys:
                self._put(_INDEX, json.dumps([*keys, key]))

    def _delete(self, key: str) -> None:
        with self._lock:
            self._remove(key)
            keys = self._index()
            if key in keys:
                self._put(_INDEX, json.dumps([k for k in keys if k != key]))


# ------------------------------------------------------------------------------ the choice


def usable_keyring() -> Any | None:
    """The keyring backend ``keyring`` chose, when it is a real OS keyring (not fail, null or a plaintext file)."""
    try:
        import keyring
        from keyring.backends import chainer, fail
    except ImportError:
        return None
    try:
        backend = keyring.get_keyring()
    except Exception:  # a broken keyring configuration: fall back to the file
        return None
    if isinstance(backend, fail.Keyring) or type(backend).__module__.startswith("keyring.backends.null"):
        return None
    if isinstance(backend, chainer.ChainerBackend) and not backend.backends:
        return None
    try:
        priority = float(backend.priority)
    except Exception:
        return None
    if priority < 1:  # keyring's own scale: below 1 are the fallbacks (e.g. keyrings.alt's plaintext file)
        return None
    return backend


def default_token_store() -> KeyringTokenStore | FileTokenStore:
    """The OS keyring when this machine has a usable one, else :class:`FileTokenStore` in the state dir.

    ``$ELICITKIT_TOKEN_STORE`` = ``keyring`` or ``file`` decides instead (``keyring`` with no usable
    keyring is an error saying so).
    """
    choice = os.environ.get(STORE_ENV, "").strip().lower()
    if choice not in ("", "keyring", "file"):
        raise TokenStoreError(f"${STORE_ENV} must be 'keyring' or 'file', not {choice!r}")
    if choice == "file":
        return FileTokenStore()
    backend = usable_keyring()
    if backend is not None:
        return KeyringTokenStore(backend)
    if choice == "keyring":
        raise TokenStoreError(
            f"${STORE_ENV}=keyring but this machine has no usable OS keyring; unset it to use the 0600 file"
        )
    return FileTokenStore()
