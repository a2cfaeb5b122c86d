"""The era is behaviour, decided once: no module reads it as a flag, and nothing looks across the
transport/server seam with ``getattr``.

Each kind of request scope (handshake, 2026 stateless, a task's run; ``server/scope.py``) owns
what differs by era, the session routes once (``server/session.py``) and ``protocol/``
classifies; everything else asks the scope. The seam (``runtime/contract.py``) names what
crosses it, so ``getattr`` on a server, an endpoint, a transport, its streams or a session is a
back door. Both rules are checked on the source, here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import elicitkit

PACKAGE = Path(elicitkit.__file__).parent
ERA_HOMES = ("server/scope.py", "server/session.py")
ERA_ATTRIBUTES = {"modern", "stateless"}
ERA_QUESTIONS = {"is_modern", "era_of"}
ROUND_NAMES = {"round", "round_"}
SEAM_NAMES = {"server", "endpoint", "transport", "streams", "session"}


def _era_reads(tree: ast.AST) -> list[tuple[int, str]]:
    """``x.modern``, ``x.stateless`` read, and ``round is None`` / ``round is not None``."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and node.attr in ERA_ATTRIBUTES:
            found.append((node.lineno, ast.unparse(node)))
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            operands = [node.left, *node.comparators]
            is_none = any(isinstance(o, ast.Constant) and o.value is None for o in operands)
            names = {o.attr if isinstance(o, ast.Attribute) else getattr(o, "id", None) for o in operands}
            if is_none and names & ROUND_NAMES:
                found.append((node.lineno, ast.unparse(node)))
    return found


def _seam_lookups(tree: ast.AST) -> list[tuple[int, str]]:
    """``getattr(`` / ``hasattr(`` on something named server, endpoint, transport, streams or session."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr")
            and node.args
        ):
            target = node.args[0]
            parts: set[str] = set()
            while isinstance(target, ast.Attribute):
                parts.add(target.attr)
                target = target.value
            if isinstance(target, ast.Name):
                parts.add(target.id)
            if parts & SEAM_NAMES:
                found.append((node.lineno, ast.unparse(node)))
    return found


def _sources() -> list[tuple[str, ast.AST]]:
    return [
        (path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted(PACKAGE.rglob("*.py"))
    ]


def test_no_module_reads_an_era_flag_outside_the_scope_the_session_and_protocol() -> None:
    offenders = [
        f"{name}:{line}: {text}"
        for name, tree in _sources()
        if not name.startswith("protocol/") and name not in ERA_HOMES
        for line, text in _era_reads(tree)
    ]
    assert offenders == []


def _era_questions(tree: ast.AST) -> list[tuple[int, str]]:
    """Calls asking which era a version is (``is_modern(...)``, ``era_of(...)``)."""
    return [
        (node.lineno, ast.unparse(node))
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and (node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)) in ERA_QUESTIONS
    ]


def test_the_server_and_the_gateway_ask_no_request_its_era() -> None:
    """Serving a request (server/, and the gateway on top of it) asks its scope to behave, never
    which era it is: the scope kinds and the session's one routing are where eras differ."""
    offenders = [
        f"{name}:{line}: {text}"
        for name, tree in _sources()
        if name.startswith(("server/", "gateway/")) and name not in ERA_HOMES
        for line, text in _era_questions(tree)
    ]
    assert offenders == []


def test_nothing_looks_across_the_seam_with_getattr() -> None:
    offenders = [f"{name}:{line}: {text}" for name, tree in _sources() for line, text in _seam_lookups(tree)]
    assert offenders == []


def test_the_checks_catch_what_they_forbid() -> None:
    """The two walkers find each shape they exist to forbid (so the tests above can fail)."""
    era = ast.parse(
        "if scope.modern: pass\n"
        "x = self.session.stateless\n"
        "if request.round is None: pass\n"
        "if round_ is not None: pass\n"
        "ok = scope.round_trip is None\n"
    )
    assert [line for line, _ in _era_reads(era)] == [1, 2, 3, 4]
    seam = ast.parse(
        'getattr(server, "serve_pages", None)\n'
        'getattr(scope.session.streams, "streams", None)\n'
        'hasattr(self.transport, "set_stateless")\n'
        'getattr(model, "field")\n'
    )
    assert [line for line, _ in _seam_lookups(seam)] == [1, 2, 3]
    asked = ast.parse(
        "if is_modern(scope.protocol_version): pass\nera = versions.era_of(v)\nmodern = scope.is_modernised\n"
    )
    assert [line for line, _ in _era_questions(asked)] == [1, 2]
