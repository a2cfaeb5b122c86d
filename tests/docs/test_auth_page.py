"""docs/auth.md stays true: its Python blocks compile, import only real names, and "your own
provider" behaves as the page says (a real AuthProvider that retries only with a new token)."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from elicitkit.auth import AuthProvider

PAGE = Path(__file__).resolve().parents[2] / "docs" / "auth.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)


def test_the_page_has_examples() -> None:
    assert len(BLOCKS) >= 5


@pytest.mark.parametrize("source", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_each_block_compiles_and_imports_real_names(source: str) -> None:
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("elicitkit"):
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(module, alias.name), f"{node.module} has no {alias.name}"


def test_your_own_provider_example_behaves_as_described() -> None:
    (source,) = [block for block in BLOCKS if "class VaultToken" in block]
    namespace: dict[str, Any] = {}
    exec(compile(source, str(PAGE), "exec"), namespace)

    class Vault:
        def __init__(self) -> None:
            self.values = ["t1", "t1", "t2"]

        async def read(self, path: str) -> str:
            return self.values.pop(0)

    provider = namespace["VaultToken"](Vault())
    assert isinstance(provider, AuthProvider)

    async def scenario() -> None:
        assert await provider.headers("POST", "https://x/mcp") == {"Authorization": "Bearer t1"}
        assert await provider.on_challenge(403, {}, "https://x/mcp", {}) is False
        assert await provider.on_challenge(401, {}, "https://x/mcp", {}) is False  # the vault still says t1
        assert await provider.on_challenge(401, {}, "https://x/mcp", {}) is True  # now t2: send again
        assert await provider.headers("POST", "https://x/mcp") == {"Authorization": "Bearer t2"}

    anyio.run(scenario)
