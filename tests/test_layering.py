"""Package-wide layering rule: only protocol/ orders protocol versions (the feature predicates)."""

from __future__ import annotations

import ast
from pathlib import Path

import elicitkit

PACKAGE = Path(elicitkit.__file__).parent


def test_no_module_outside_protocol_orders_version_strings() -> None:
    offenders: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.is_relative_to(PACKAGE / "protocol"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare) and any(
                isinstance(op, (ast.Lt, ast.LtE, ast.Gt, ast.GtE)) for op in node.ops
            ):
                text = ast.unparse(node)
                operands = [node.left, *node.comparators]
                dated = any(
                    isinstance(o, ast.Constant) and isinstance(o.value, str) and o.value[:2] == "20" for o in operands
                )
                if "version" in text.lower() or dated:
                    offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {text}")
    assert offenders == []
