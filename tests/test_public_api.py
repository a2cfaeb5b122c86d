"""The public surface: a curated ``elicitkit`` namespace, one error root, seed names in compat."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

import elicitkit
import elicitkit.compat
import elicitkit.errors

ROOT = Path(__file__).resolve().parents[1]
PUBLIC_MODULES = {
    "elicitkit",
    "elicitkit.content",
    "elicitkit.errors",
    "elicitkit.compat",
    "elicitkit.tasks",
    "elicitkit.testing.kit",
    "elicitkit.server.auth",  # the resource server (docs/auth.md)
    "elicitkit.server.auth.connections",  # third-party sign-in (docs/auth.md)
}


def test_the_curated_api_is_small_and_every_name_is_documented() -> None:
    names = [n for n in elicitkit.__all__ if n != "__version__"]
    assert 25 <= len(names) <= 35, len(names)
    doc = elicitkit.__doc__ or ""
    undocumented = [n for n in names if not re.search(rf"``{n}\b", doc)]
    assert undocumented == []
    for name in names:
        assert getattr(elicitkit, name) is not None


def test_every_error_is_under_the_one_root() -> None:
    for name in elicitkit.errors.__all__:
        cls = getattr(elicitkit.errors, name)
        assert issubclass(cls, elicitkit.errors.ElicitkitError), name
        assert name in (elicitkit.errors.__doc__ or ""), f"{name} is missing from the documented tree"


def test_every_exception_class_in_the_package_is_in_the_tree_or_private() -> None:
    """A new public exception must join the tree (and its documentation)."""
    known = set(elicitkit.errors.__all__)
    found: list[str] = []
    for path in (ROOT / "src" / "elicitkit").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
                if bases & {"Exception", "ValueError", "TypeError", "RuntimeError"} or any(
                    b.endswith(("Error", "Exception")) for b in bases
                ):
                    found.append(node.name)
    internal = {
        "FieldError",
        "Stop",
        "InputRequired",
        "QuestionsPending",
        "HolderGone",
    }  # UI-internal, or control signals
    assert sorted(set(found) - known - internal) == []


def test_the_control_signal_is_not_an_exception() -> None:
    from elicitkit.server.rounds.round import InputRequired

    assert issubclass(InputRequired, BaseException) and not issubclass(InputRequired, Exception)


def test_one_url_elicitation_required_for_both_sides() -> None:
    assert elicitkit.compat.UrlElicitationRequiredError is elicitkit.UrlElicitationRequired
    assert issubclass(elicitkit.UrlElicitationRequired, elicitkit.MCPError)
    assert issubclass(elicitkit.UrlElicitationRequired, elicitkit.ElicitationError)


@pytest.mark.parametrize("name", elicitkit.compat.__all__)
def test_seed_names_import_from_compat_and_stay_the_same_objects(name: str) -> None:
    """The seeds' names moved from the top to compat (the top exports the curated names only);
    each is still the very object the curated API or its module has."""
    homes = {
        "MCPServer": elicitkit.Server,
        "UrlElicitationRequiredError": elicitkit.UrlElicitationRequired,
        "LowLevelServer": importlib.import_module("elicitkit.server.lowlevel").LowLevelServer,
        "RequestContext": importlib.import_module("elicitkit.server.scope").RequestScope,
        "ServerSession": importlib.import_module("elicitkit.server.session").ServerSession,
        "ElicitationHandler": importlib.import_module("elicitkit.client.handlers.handler").ElicitationHandler,
        "create_form_request": importlib.import_module("elicitkit.elicitation.requests").create_form_request,
        "create_url_request": importlib.import_module("elicitkit.elicitation.requests").create_url_request,
    }
    assert getattr(elicitkit.compat, name) is homes[name]
    assert name not in elicitkit.__all__


def test_the_top_exports_the_curated_names_and_nothing_else() -> None:

    public = {
        name
        for name, value in vars(elicitkit).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    curated = set(elicitkit.__all__) - {"__version__"}
    assert public == curated
    for name in ("MCPServer", "LowLevelServer", "AuditLog", "Image", "ElicitRequest"):
        with pytest.raises(AttributeError):
            getattr(elicitkit, name)


def test_seed_era_aliases_behave() -> None:
    assert elicitkit.compat.MCPServer is elicitkit.Server
    request = elicitkit.compat.create_form_request("Who?", {"name": {"type": "string"}}, required=["name"])
    assert request.to_dict()["requestedSchema"]["required"] == ["name"]
    declined = elicitkit.ElicitationResult.decline()
    assert declined.to_dict()["action"] == "decline"


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_thing"):
        elicitkit.no_such_thing  # noqa: B018
    with pytest.raises(AttributeError, match="NoSuchError"):
        elicitkit.errors.NoSuchError  # noqa: B018


def test_examples_import_only_the_public_api() -> None:
    offenders = []
    for path in (ROOT / "examples").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("elicitkit"):
                if node.module not in PUBLIC_MODULES:
                    offenders.append(f"{path.relative_to(ROOT)}: from {node.module}")
                elif node.module == "elicitkit":
                    offenders += [
                        f"{path.relative_to(ROOT)}: {a.name} is not curated"
                        for a in node.names
                        if a.name not in elicitkit.__all__
                    ]
    assert offenders == []


def test_public_modules_import() -> None:
    for module in PUBLIC_MODULES:
        importlib.import_module(module)


@pytest.mark.parametrize("module", [elicitkit, elicitkit.errors])
def test_the_public_names_are_eager(module: types.ModuleType) -> None:
    """Every exported name is bound at import (what mypy and IDEs see); no module-level ``__getattr__``."""
    assert "__getattr__" not in vars(module)
    assert [name for name in module.__all__ if name not in vars(module)] == []


def test_import_elicitkit_leaves_the_heavy_libraries_unloaded() -> None:
    """``import elicitkit`` stays cheap: the terminal UI, the web stack, JOSE and keyring load where used."""
    heavy = ["prompt_toolkit", "rich", "joserfc", "keyring", "uvicorn", "starlette", "aiohttp"]
    code = (
        "import sys, elicitkit, elicitkit.errors\n"
        "assert elicitkit.errors.TokenStoreError.__module__ == 'elicitkit.auth.errors'\n"
        "assert elicitkit.TerminalHandler and elicitkit.BrowserHandler\n"
        f"print(' '.join(m for m in {heavy!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == []
