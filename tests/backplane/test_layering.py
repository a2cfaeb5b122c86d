"""backplane/ sits beside the transports: it imports nothing from server/, client/ or transports/;
and its MAC refuses what was forged or sealed for somewhere else."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from elicitkit.backplane.signing import MissingFleetKey, Signer, fleet_key

SRC = Path(__file__).resolve().parents[2] / "src" / "elicitkit"


def test_backplane_imports_neither_server_client_nor_transports() -> None:
    offenders = []
    for path in sorted((SRC / "backplane").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [
                f"{path.name}: {n}"
                for n in names
                if n.startswith(("elicitkit.server", "elicitkit.client", "elicitkit.transports"))
            ]
    assert offenders == []


def test_a_message_opens_only_under_the_key_and_where_it_was_sealed() -> None:
    signer = Signer(fleet_key("shared"))
    sealed = signer.seal(b"elicitkit:inbox:a", b'{"k":"feed"}')
    assert signer.open(b"elicitkit:inbox:a", sealed) == b'{"k":"feed"}'
    assert signer.open(b"elicitkit:inbox:b", sealed) is None  # replayed to another instance
    assert Signer(fleet_key("other")).open(b"elicitkit:inbox:a", sealed) is None  # forged
    tampered = sealed[:-1] + bytes([sealed[-1] ^ 1])  # any change at all (the tag is random: never a fixed byte)
    assert signer.open(b"elicitkit:inbox:a", tampered) is None


def test_a_fleet_without_a_key_refuses_to_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ELICITKIT_FLEET_KEY", raising=False)
    monkeypatch.delenv("ELICITKIT_STATE_KEYS", raising=False)
    with pytest.raises(MissingFleetKey, match="ELICITKIT_FLEET_KEY"):
        fleet_key()
    monkeypatch.setenv("ELICITKIT_STATE_KEYS", "abc")
    assert fleet_key() == fleet_key("abc")
