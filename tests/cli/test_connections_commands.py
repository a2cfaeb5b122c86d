"""``elicitkit connections list|revoke`` over a real SQLite store a server wrote: shown, never a token."""

from __future__ import annotations

import json
import time
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner

from elicitkit.auth.tokens import TokenSet
from elicitkit.cli import main
from elicitkit.server.auth.connections import Connections, Provider
from elicitkit.server.auth.connections.sqlite_store import SQLiteConnectionStore
from elicitkit.server.rounds.keys import KeyRing

SECRETS = ("at-SECRET-ada-1", "rt-SECRET-ada-2", "at-SECRET-eve-3")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "tasks.db"
    gh = Provider("gh", client_id="app", authorization_endpoint="https://gh/a", token_endpoint="https://gh/t")
    store = SQLiteConnectionStore(path)
    connections = Connections([gh], store=store, keys=KeyRing.generate())

    async def seed() -> None:
        later = time.time() + 3600
        await connections.save(
            "ada", "gh", TokenSet(SECRETS[0], expires_at=later, refresh_token=SECRETS[1], scope="repo")
        )
        await connections.save("eve", "gh", TokenSet(SECRETS[2]))
        await store.close()

    anyio.run(seed)
    return path


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args), catch_exceptions=False)
    return result.exit_code, result.output


def test_list_shows_who_where_and_until_when_never_a_token(db: Path) -> None:
    code, out = run("connections", "list", "--db", str(db))
    assert code == 0
    assert "ada  gh  scopes: repo" in out and "renews by itself" in out
    assert "eve  gh  scopes: -" in out and "does not renew" in out
    code, out_json = run("connections", "list", "ada", "--db", str(db), "--json")
    listed = json.loads(out_json)["connections"]
    assert code == 0 and [(c["principal"], c["provider"], c["renews"]) for c in listed] == [("ada", "gh", True)]
    for secret in SECRETS:
        assert secret not in out and secret not in out_json


def test_revoke_one_principal_leaves_the_others(db: Path) -> None:
    code, out = run("connections", "revoke", "ada", "gh", "--db", str(db))
    assert code == 0 and "Revoked ada's gh connection" in out
    code, out = run("connections", "revoke", "ada", "gh", "--db", str(db), "--json")
    assert code == 1 and json.loads(out) == {"principal": "ada", "provider": "gh", "revoked": False}
    _, out = run("connections", "list", "--db", str(db), "--json")
    assert [c["principal"] for c in json.loads(out)["connections"]] == ["eve"]


def test_no_store_named_is_a_usage_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ELICITKIT_TASK_DB", raising=False)
    monkeypatch.delenv("ELICITKIT_REDIS_URL", raising=False)
    result = CliRunner().invoke(main, ["connections", "list"])
    assert result.exit_code == 2 and "--db FILE" in result.output
    result = CliRunner().invoke(main, ["connections", "list", "--db", str(tmp_path / "nothing.db")])
    assert result.exit_code == 2 and "no store" in result.output
