"""Connections in SQLite: the task store's file (one file holds what a server keeps), two tables.

Its own connection on a private thread, as :class:`~elicitkit.server.tasks.store.SQLiteTaskStore`
does (WAL: both can use the file at once, and so can several processes). The file is created
readable by this user only; the tokens in it are sealed anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from elicitkit.server.auth.connections.store import Row

__all__ = ["SQLiteConnectionStore"]

_T = TypeVar("_T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS elicitkit_connections (
    principal TEXT NOT NULL,
    provider TEXT NOT NULL,
    sealed BLOB NOT NULL,
    meta TEXT NOT NULL,
    PRIMARY KEY (principal, provider)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS elicitkit_connection_flows (
    flow_id TEXT PRIMARY KEY,
    sealed BLOB NOT NULL,
    expires_at REAL NOT NULL
) WITHOUT ROWID;
"""


class SQLiteConnectionStore:
    """Connections and sign-in flows in the SQLite file at ``path``."""

    def __init__(self, path: str | Path, *, busy_timeout: float = 10.0) -> None:
        self.path = Path(path)
        self._busy_ms = int(busy_timeout * 1000)
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="elicitkit-connections-sqlite")
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()
        self._closed = False

    def _db(self) -> sqlite3.Connection:
        with self._lock:
            if self._closed:
                raise RuntimeError("the connection store is closed")
            if self._conn is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with contextlib.suppress(FileExistsError):
                    os.close(os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
                conn = sqlite3.connect(self.path, isolation_level=None, timeout=self._busy_ms / 1000)
                conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
                conn.execute("PRAGMA journal_mode = WAL")
                conn.executescript(_SCHEMA)
                self._conn = conn
            return self._conn

    async def _run(self, fn: Callable[[sqlite3.Connection], _T]) -> _T:
        if self._closed:
            raise RuntimeError("the connection store is closed")
        return await asyncio.get_running_loop().run_in_executor(self._executor, lambda: fn(self._db()))

    async def get(self, principal: str, provider: str) -> Row | None:
        def select(db: sqlite3.Connection) -> tuple[bytes, str] | None:
            found = db.execute(
                "SELECT sealed, meta FROM elicitkit_connections WHERE principal = ? AND provider = ?",
                (principal, provider),
            ).fetchone()
            return None if found is None else (bytes(found[0]), str(found[1]))

        found = await self._run(select)
        return None if found is None else Row(principal, provider, found[0], json.loads(found[1]))

    async def put(self, row: Row, *, expected: bytes | None = None) -> bool:
        meta = json.dumps(row.meta, sort_keys=True)

        def write(db: sqlite3.Connection) -> int:
            if expected is None:
                return db.execute(
                    "INSERT INTO elicitkit_connections (principal, provider, sealed, meta) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (principal, provider) DO UPDATE SET sealed = excluded.sealed, meta = excluded.meta",
                    (row.principal, row.provider, row.sealed, meta),
                ).rowcount
            return db.execute(
                "UPDATE elicitkit_connections SET sealed = ?, meta = ? WHERE principal = ? AND provider = ? "
                "AND sealed = ?",
                (row.sealed, meta, row.principal, row.provider, expected),
            ).rowcount

        return await self._run(write) == 1

    async def delete(self, principal: str, provider: str) -> bool:
        def remove(db: sqlite3.Connection) -> int:
            return db.execute(
                "DELETE FROM elicitkit_connections WHERE principal = ? AND provider = ?", (principal, provider)
            ).rowcount

        return await self._run(remove) == 1

    async def rows(self, principal: str | None = None) -> list[Row]:
        def select(db: sqlite3.Connection) -> list[tuple[str, str, bytes, str]]:
            sql = "SELECT principal, provider, sealed, meta FROM elicitkit_connections"
            args: tuple[str, ...] = ()
            if principal is not None:
                sql, args = sql + " WHERE principal = ?", (principal,)
            return [(str(a), str(b), bytes(c), str(d)) for a, b, c, d in db.execute(sql + " ORDER BY 1, 2", args)]

        return [Row(p, v, s, json.loads(m)) for p, v, s, m in await self._run(select)]

    async def flow_get(self, flow_id: str) -> bytes | None:
        def select(db: sqlite3.Connection) -> bytes | None:
            found = db.execute(
                "SELECT sealed FROM elicitkit_connection_flows WHERE flow_id = ? AND expires_at >= ?",
                (flow_id, time.time()),
            ).fetchone()
            return None if found is None else bytes(found[0])

        return await self._run(select)

    async def flow_put(self, flow_id: str, sealed: bytes, expires_at: float, *, expected: bytes | None = None) -> bool:
        def write(db: sqlite3.Connection) -> int:
            now = time.time()
            db.execute("DELETE FROM elicitkit_connection_flows WHERE expires_at < ?", (now,))
            if expected is None:
                return db.execute(
                    "INSERT OR IGNORE INTO elicitkit_connection_flows (flow_id, sealed, expires_at) VALUES (?, ?, ?)",
                    (flow_id, sealed, expires_at),
                ).rowcount
            return db.execute(
                "UPDATE elicitkit_connection_flows SET sealed = ?, expires_at = ? WHERE flow_id = ? AND sealed = ?",
                (sealed, expires_at, flow_id, expected),
            ).rowcount

        return await self._run(write) == 1

    async def close(self) -> None:
        if self._closed:
            return

        def shut() -> None:
            with self._lock:
                self._closed = True
                if self._conn is not None:
                    self._conn.close()
                    self._conn = None

        await asyncio.get_running_loop().run_in_executor(self._executor, shut)
        self._executor.shutdown(wait=True)
