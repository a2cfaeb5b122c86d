"""What ``import elicitkit`` costs: every server and CLI subprocess pays it, so it loads only what it binds.

``elicitkit.errors`` imports the gateway's and the OAuth client's errors, which runs those
packages' ``__init__``; their other names load on first use. jsonschema loads on the first
answer the fast check cannot settle.
"""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

LAZY_PACKAGES = ["elicitkit.auth", "elicitkit.gateway"]


def _loaded_after(code: str, modules: list[str]) -> list[str]:
    probe = f"import sys\n{code}\nprint(' '.join(m for m in {modules!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_import_elicitkit_leaves_the_gateway_the_oauth_client_and_jsonschema_unloaded() -> None:
    heavy = ["elicitkit.gateway.gateway", "elicitkit.gateway.config", "elicitkit.auth.oauth", "jsonschema"]
    assert _loaded_after("import elicitkit, elicitkit.errors", heavy) == []
    # ... and they are what the names load, when used
    code = "import elicitkit.gateway, elicitkit.auth\nelicitkit.gateway.Gateway\nelicitkit.auth.OAuth"
    assert _loaded_after(code, heavy) == heavy[:3]


def test_an_answer_the_fast_check_settles_needs_no_jsonschema() -> None:
    code = (
        "from elicitkit.elicitation.answers import validate_answer\n"
        "schema = {'type': 'object', 'properties': {'n': {'type': 'integer'}}, 'required': ['n']}\n"
        "assert validate_answer(schema, {'n': 2}) == {'n': 2}"
    )
    assert _loaded_after(code, ["jsonschema"]) == []
    wrong = code.replace("assert validate_answer(schema, {'n': 2}) == {'n': 2}", "")
    wrong += (
        "from elicitkit.elicitation.errors import InvalidAnswer\n"
        "try:\n    validate_answer(schema, {'n': 'two'})\n"
        "except InvalidAnswer as exc:\n    assert 'integer' in str(exc), exc\n"
        "else:\n    raise AssertionError('accepted')"
    )
    assert _loaded_after(wrong, ["jsonschema"]) == ["jsonschema"]


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_every_name_of_a_lazy_package_is_the_object_of_its_home(name: str) -> None:
    package = importlib.import_module(name)
    homes: dict[str, str] = package._HOMES
    assert sorted(homes) == sorted(package.__all__)
    for exported, home in homes.items():
        assert getattr(package, exported) is getattr(importlib.import_module(home), exported)
    assert set(package.__all__) <= set(dir(package))
    star: dict[str, object] = {}
    exec(f"from {name} import *", star)
    assert {k for k in star if not k.startswith("__")} == set(package.__all__)


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_an_unknown_name_of_a_lazy_package_is_an_attribute_error(name: str) -> None:
    package = importlib.import_module(name)
    with pytest.raises(AttributeError, match="no attribute 'NoSuchName'"):
        package.NoSuchName  # noqa: B018
    with pytest.raises(ImportError):
        exec(f"from {name} import NoSuchName", {})
