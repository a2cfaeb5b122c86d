"""The elicitkit pytest plugin (entry point ``pytest11: elicitkit``): the ``elicitkit`` fixture,
the ``elicitkit_eras`` marker and the ``--elicitkit-update-snapshots`` flag.

Off until used: a test that neither takes the ``elicitkit`` fixture nor carries the marker is
left exactly as it was. This module lives outside the ``elicitkit`` package so that pytest
loading it imports nothing but pytest; the kit (:mod:`elicitkit.testing.kit`) is imported when
a test first asks for the fixture.

``@pytest.mark.elicitkit_eras(*eras, transports=("memory",))`` runs the test once per era
(all three when none is named) and transport. An ``async def`` test that uses the fixture
runs on asyncio without a marker of its own.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

if TYPE_CHECKING:
    from elicitkit.testing.kit.kit import Case, Kit

MARKER = "elicitkit_eras"
ALL_ERAS = ("2025-06-18", "2025-11-25", "2026-07-28")  # equal to elicitkit.testing.kit.ERAS (a test checks)
_DID_NOT_PASS = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("elicitkit", "elicitkit: testing servers that ask")
    group.addoption(
        "--elicitkit-update-snapshots",
        action="store_true",
        default=False,
        help="write the question snapshots of elicitkit.assert_snapshot() instead of comparing them",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(*eras, transports=('memory',)): run an elicitkit test on each protocol era "
        f"(default: all of {', '.join(ALL_ERAS)}) over each transport (memory, stdio, http)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run an ``async def`` test that uses the kit on asyncio, unless another runner has it.

    (A test marked ``anyio`` or ``asyncio`` stays with that plugin; async fixtures need one.)
    """
    function = pyfuncitem.obj
    if not inspect.iscoroutinefunction(function) or "elicitkit" not in pyfuncitem.funcargs:
        return None
    if "anyio_backend" in pyfuncitem.funcargs or any(
        pyfuncitem.get_closest_marker(name) is not None for name in ("anyio", "asyncio", "trio")
    ):
        return None
    import functools

    import anyio

    arguments = {name: pyfuncitem.funcargs[name] for name in inspect.signature(function).parameters}
    anyio.run(functools.partial(function, **arguments), backend="asyncio")
    return True


def _misuse(message: str) -> NoReturn:
    """Fail the collection with the message alone: a traceback into the plugin would only hide it."""
    pytest.fail(message, pytrace=False)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker(MARKER)
    if marker is None:
        return
    if "elicitkit" not in metafunc.fixturenames:
        _misuse(f"{metafunc.definition.nodeid}: @pytest.mark.{MARKER} needs the elicitkit fixture")
    from elicitkit.testing.kit.kit import Case

    eras = marker.args or ALL_ERAS
    transports = marker.kwargs.get("transports", ("memory",))
    if isinstance(transports, str):
        transports = (transports,)
    unknown = set(marker.kwargs) - {"transports"}
    if unknown:
        _misuse(f"@pytest.mark.{MARKER}: unknown option(s) {sorted(unknown)}; only transports=")
    try:
        cases = [
            Case(era, transport, era if len(transports) == 1 else f"{era}-{transport}")
            for transport in transports
            for era in eras
        ]
    except ValueError as exc:
        _misuse(f"{metafunc.definition.nodeid}: @pytest.mark.{MARKER}: {exc}")
    metafunc.parametrize("elicitkit_case", cases, ids=[case.id for case in cases])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if call.when in ("setup", "call") and not report.passed and "elicitkit" in getattr(item, "fixturenames", ()):
        item.stash[_DID_NOT_PASS] = True
    return report


@pytest.fixture
def elicitkit_case() -> Case:
    """The era and transport of a test without the marker: 2025-11-25 in memory."""
    from elicitkit.testing.kit.kit import DEFAULT_ERA, Case

    return Case(DEFAULT_ERA, "memory", DEFAULT_ERA)


@pytest.fixture
def elicitkit(request: pytest.FixtureRequest, elicitkit_case: Case) -> Iterator[Kit]:
    """A scripted person and a way to connect servers to it, on this test's era and transport.

    At teardown every scripted answer that was never used is reported (unless the test
    failed or was skipped: the leftovers would only repeat that).
    """
    from elicitkit.testing.kit.kit import Kit

    node = request.node
    name = node.name.replace(f"[{elicitkit_case.id}]", f"[{elicitkit_case.era}]") if elicitkit_case.id else node.name
    test_file = Path(str(node.path))
    snapshots = test_file.parent / "__snapshots__" / test_file.stem / f"{name}.json"
    kit = Kit(
        elicitkit_case,
        snapshot_path=snapshots,
        update_snapshots=bool(request.config.getoption("--elicitkit-update-snapshots")),
    )
    yield kit
    problems = kit.close()
    if problems and not node.stash.get(_DID_NOT_PASS, False):
        pytest.fail("elicitkit: the script was not played out:\n  " + "\n  ".join(problems), pytrace=False)
