"""The token stores: a 0600 file written atomically, the OS keyring, and the choice between them."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import keyring
import keyring.backend
import keyring.errors
import pytest
from keyring.backends import fail

from elicitkit.auth import FileTokenStore, KeyringTokenStore, TokenStoreError, default_token_store
from elicitkit.auth.stores import default_token_file

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]

SECRET = "eyJhbGciOi-access-token-value"
KEY = "https://mcp.example/mcp|https://as.example"
ENTRY = {"tokens": {"access_token": SECRET, "refresh_token": "rt-1"}, "issuer": "https://as.example"}


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# ------------------------------------------------------------------------------ the file


async def test_round_trip_in_a_private_file(tmp_path: Path) -> None:
    path = tmp_path / "state" / "elicitkit" / "tokens.json"
    store = FileTokenStore(path)
    assert await store.load(KEY) is None
    assert await store.keys() == []
    await store.save(KEY, ENTRY)
    await store.save("other", {"a": 1})
    assert await store.load(KEY) == ENTRY
    assert await FileTokenStore(path).load(KEY) == ENTRY  # another process sees it
    assert await store.keys() == sorted([KEY, "other"])
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700
    await store.delete(KEY)
    await store.delete(KEY)  # twice is fine
    assert await store.load(KEY) is None
    assert await store.keys() == ["other"]
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_default_path_follows_xdg_state_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert default_token_file() == tmp_path / "xdg" / "elicitkit" / "tokens.json"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/ignored")  # the XDG spec: relative paths are invalid
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert default_token_file() == tmp_path / "home" / ".local" / "state" / "elicitkit" / "tokens.json"
    monkeypatch.delenv("XDG_STATE_HOME")
    assert FileTokenStore().path == tmp_path / "home" / ".local" / "state" / "elicitkit" / "tokens.json"


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b"\xff\xfe", b"", b'"a string"'])
async def test_a_corrupt_file_is_kept_aside_and_the_store_starts_afresh(
    tmp_path: Path, content: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tokens.json"
    path.write_bytes(content)
    path.chmod(0o600)
    store = FileTokenStore(path)
    assert await store.load(KEY) is None
    aside = tmp_path / "tokens.json.corrupt-1"
    assert aside.read_bytes() == content  # nothing is lost: the person can look at it
    assert "was not valid JSON" in caplog.text and str(aside) in caplog.text
    await store.save(KEY, ENTRY)
    assert json.loads(path.read_text()) == {KEY: ENTRY}
    path.write_bytes(b"{broken again")
    assert await store.keys() == []
    assert (tmp_path / "tokens.json.corrupt-2").read_bytes() == b"{broken again"
    assert aside.read_bytes() == content


async def test_an_entry_that_is_not_an_object_reads_as_missing(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({KEY: "not an object", "good": {"a": 1}}))
    store = FileTokenStore(path)
    assert await store.load(KEY) is None
    assert await store.load("good") == {"a": 1}


async def test_a_file_others_can_read_is_narrowed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({KEY: ENTRY}))
    path.chmod(0o644)
    assert await FileTokenStore(path).load(KEY) == ENTRY
    assert mode(path) == 0o600
    assert "readable by others" in caplog.text
    assert SECRET not in caplog.text


async def test_an_open_elicitkit_directory_is_narrowed(tmp_path: Path) -> None:
    directory = tmp_path / "elicitkit"
    directory.mkdir(mode=0o755)
    directory.chmod(0o755)
    await FileTokenStore(directory / "tokens.json").save(KEY, ENTRY)
    assert mode(directory) == 0o700


async def test_a_failed_write_leaves_the_old_file_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "tokens.json"
    store = FileTokenStore(path)
    await store.save(KEY, ENTRY)
    before = path.read_bytes()

    def refuse(src: Any, dst: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(TokenStoreError) as caught:
        await store.save("new", {"tokens": {"access_token": "another-secret"}})
    message = str(caught.value)
    assert str(path) in message and "No space left on device" in message
    assert "another-secret" not in message and SECRET not in message
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["tokens.json", "tokens.json.lock"]


async def test_a_path_that_cannot_be_a_directory_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file")
    store = FileTokenStore(blocker / "tokens.json")
    with pytest.raises(TokenStoreError, match=r"could not read the token file .*Not a directory"):
        await store.load(KEY)
    with pytest.raises(TokenStoreError, match="could not create the directory of the token file") as caught:
        await store.save(KEY, ENTRY)
    assert "ELICITKIT_TOKEN_STORE" in str(caught.value)


async def test_concurrent_writers_keep_every_entry(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"

    async def write(n: int) -> None:
        await FileTokenStore(path).save(f"server-{n}", {"n": n})  # a store each: as separate commands

    async with anyio.create_task_group() as tg:
        for n in range(30):
            tg.start_soon(write, n)
    assert await FileTokenStore(path).keys() == sorted(f"server-{n}" for n in range(30))


# ------------------------------------------------------------------------------ the keyring


class MemoryKeyring(keyring.backend.KeyringBackend):
    """A keyring backend in a dict (the ``keyring`` API, without an OS keyring)."""

    priority = 1  # type: ignore[assignment]

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[tuple[str, str], str] = {}
        self.locked = False

    def get_password(self, service: str, username: str) -> str | None:
        if self.locked:
            raise keyring.errors.KeyringLocked("locked")
        return self.entries.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        if self.locked:
            raise keyring.errors.PasswordSetError("locked")
        if len(password) > 1280:  # Windows' Credential Manager: 2560 bytes of UTF-16
            raise keyring.errors.PasswordSetError("too long")
        self.entries[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if (service, username) not in self.entries:
            raise keyring.errors.PasswordDeleteError("not found")
        del self.entries[(service, username)]


async def test_keyring_round_trip_with_an_index() -> None:
    backend = MemoryKeyring()
    store = KeyringTokenStore(backend)
    assert await store.load(KEY) is None and await store.keys() == []
    await store.save(KEY, ENTRY)
    await store.save("other", {"a": 1})
    await store.save(KEY, ENTRY)  # listed once
    assert await store.load(KEY) == ENTRY
    assert json.loads(backend.entries[("elicitkit", KEY)]) == ENTRY
    assert await store.keys() == sorted([KEY, "other"])
    await store.delete(KEY)
    await store.delete(KEY)
    assert await store.load(KEY) is None and await store.keys() == ["other"]
    with pytest.raises(ValueError, match="reserved"):
        await store.save("__elicitkit_index__", {})


async def test_long_values_are_kept_in_parts() -> None:
    backend = MemoryKeyring()
    store = KeyringTokenStore(backend)
    long_entry = {"tokens": {"access_token": "j" * 4000, "refresh_token": "r" * 900}}
    await store.save(KEY, long_entry)
    assert all(len(v) <= 1000 for v in backend.entries.values())
    assert await store.load(KEY) == long_entry
    parts = [name for (_, name) in backend.entries if name.startswith(KEY + " #")]
    assert len(parts) == 5
    await store.save(KEY, ENTRY)  # short again: the parts go
    assert await store.load(KEY) == ENTRY
    assert [name for (_, name) in backend.entries if name.startswith(KEY + " #")] == []
    await store.save(KEY, long_entry)
    await store.delete(KEY)
    assert [name for (_, name) in backend.entries if name != "__elicitkit_index__"] == []
    many = [f"tokens {json.dumps(['https://mcp.example.com/' + 'x' * 60 + str(n), 'https://as'])}" for n in range(40)]
    for key in many:
        await store.save(key, {"a": 1})
    assert await store.keys() == sorted(many)  # the index itself is kept in parts


async def test_a_missing_part_reads_as_missing() -> None:
    backend = MemoryKeyring()
    store = KeyringTokenStore(backend)
    await store.save(KEY, {"access_token": "j" * 3000})
    del backend.entries[("elicitkit", KEY + " #1")]
    assert await store.load(KEY) is None


async def test_a_corrupt_keyring_entry_reads_as_missing(caplog: pytest.LogCaptureFixture) -> None:
    backend = MemoryKeyring()
    backend.entries[("elicitkit", KEY)] = "{half a token " + SECRET
    backend.entries[("elicitkit", "__elicitkit_index__")] = "not json"
    store = KeyringTokenStore(backend)
    assert await store.load(KEY) is None
    assert await store.keys() == []
    assert "not valid JSON" in caplog.text and SECRET not in caplog.text


async def test_a_locked_keyring_is_a_clear_error() -> None:
    backend = MemoryKeyring()
    store = KeyringTokenStore(backend)
    await store.save(KEY, ENTRY)
    backend.locked = True
    with pytest.raises(TokenStoreError, match="refused to read a token") as caught:
        await store.load(KEY)
    assert "ELICITKIT_TOKEN_STORE=file" in str(caught.value)
    with pytest.raises(TokenStoreError, match=r"refused to (read|store) a token") as caught:
        await store.save(KEY, {"tokens": {"access_token": "new-" + SECRET}})
    assert SECRET not in str(caught.value)


# ------------------------------------------------------------------------------ the choice


@pytest.fixture
def chosen_keyring() -> Iterator[None]:
    before = keyring.get_keyring()
    yield
    keyring.set_keyring(before)


def test_default_is_the_keyring_when_a_real_one_is_usable(
    chosen_keyring: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ELICITKIT_TOKEN_STORE", raising=False)
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    store = default_token_store()
    assert isinstance(store, KeyringTokenStore) and store.backend is backend


def test_default_is_the_file_without_a_usable_keyring(
    chosen_keyring: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("ELICITKIT_TOKEN_STORE", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    keyring.set_keyring(fail.Keyring())
    store = default_token_store()
    assert isinstance(store, FileTokenStore) and store.path == tmp_path / "elicitkit" / "tokens.json"
    monkeypatch.setenv("ELICITKIT_TOKEN_STORE", "keyring")
    with pytest.raises(TokenStoreError, match="no usable OS keyring"):
        default_token_store()


class PlaintextKeyring(MemoryKeyring):
    """Like keyrings.alt's plaintext file: a keyring in name only, priority below 1."""

    priority = 0.5  # type: ignore[assignment]


def test_a_low_priority_keyring_is_not_used(
    chosen_keyring: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("ELICITKIT_TOKEN_STORE", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    keyring.set_keyring(PlaintextKeyring())
    assert isinstance(default_token_store(), FileTokenStore)


def test_the_environment_decides(chosen_keyring: None, monkeypatch: pytest.MonkeyPatch) -> None:
    keyring.set_keyring(MemoryKeyring())
    monkeypatch.setenv("ELICITKIT_TOKEN_STORE", "file")
    assert isinstance(default_token_store(), FileTokenStore)
    monkeypatch.setenv("ELICITKIT_TOKEN_STORE", "keyring")
    assert isinstance(default_token_store(), KeyringTokenStore)
    monkeypatch.setenv("ELICITKIT_TOKEN_STORE", "vault")
    with pytest.raises(TokenStoreError, match="must be 'keyring' or 'file'"):
        default_token_store()
