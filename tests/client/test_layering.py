"""The client's layering rules, checked on the source: no server imports, no version arithmetic.

``client/`` reaches a server object through the in-memory transport and a small protocol, so
it never imports ``elicitkit.server``; era facts come from the predicates in ``protocol/``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import elicitkit.client

CLIENT = Path(elicitkit.client.__file__).parent
VERSION_LITERAL = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _modules() -> list[Path]:
    return sorted(CLIENT.rglob("*.py"))


def _imports(tree: ast.AST) -> list[str]:
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


def test_client_does_not_import_the_server() -> None:
    offenders = [
        f"{path.relative_to(CLIENT)}: {name}"
        for path in _modules()
        for name in _imports(ast.parse(path.read_text()))
        if name == "elicitkit.server" or name.startswith("elicitkit.server.")
    ]
    assert offenders == []


def test_client_compares_no_protocol_version_strings() -> None:
    """No date literal in code (docstrings may name eras), and no ordering of strings."""
    offenders: list[str] = []
    for path in _modules():
        tree = ast.parse(path.read_text())
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docstrings
                and VERSION_LITERAL.match(node.value)
            ):
                offenders.append(f"{path.relative_to(CLIENT)}:{node.lineno}: {node.value!r}")
            if isinstance(node, ast.Compare) and any(
                isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in node.ops
            ):
                text = ast.unparse(node)
                if "version" in text.lower():
                    offenders.append(f"{path.relative_to(CLIENT)}:{node.lineno}: {text}")
            if isinstance(node, ast.Compare) and any(
                isinstance(c, ast.Name) and c.id.endswith("_VERSIONS") for c in node.comparators
            ):
                offenders.append(f"{path.relative_to(CLIENT)}:{node.lineno}: {ast.unparse(node)}")
    assert offenders == []
