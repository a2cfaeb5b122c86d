"""The elicitkit pytest plugin (entry point ``pytest11: elicitkit``): the ``elicitkit`` fixture,
the ``elicitkit_eras`` marker and the ``--elicitkit-update-snapshots`` flag.

Off until used: a test that neither takes the ``elicitkit`` fixture nor carries the marker is
left exactly as it was. This module lives outside the ``elicitkit`` package so that pytest
loading it imports nothing but pytest; the kit (:mod:`elicitkit.testing.kit`) is imported when
a test first asks for the fixture.

``@pytest.mark.elicitkit_eras(*eras, transports=("memory",), tasks=False)`` runs the test once
per era (all three when none is named) and transport; ``tasks=True`` adds the task column (the
kit's calls run as tasks) on each era that has tasks, and ``"2026-07-28-task"`` names that
column alone. An ``async def`` test that uses the fixture runs on asyncio without a marker of
its own.
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
TASK_ERAS = ("2026-07-28",)  # equal to elicitkit.testing.kit.serving.TASK_ERAS (a test checks)
TASK_SUFFIX = "-task"  # "2026-07-28-task": that era's column with the calls run as tasks
_DID_NOT_PASS = pytest.StashKey[bool]()
_BAD_MARKERS = pytest.StashKey[dict[str, str]]()  # node id -> what is wrong with its marker
_SNAPSHOTS = pytest.StashKey[Any]()  # the session's elicitkit.testing.kit.kit.SnapshotLog, once a test used one


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
        f"{MARKER}(*eras, transports=('memory',), tasks=False): run an elicitkit test on each protocol era "
        f"(default: all of {', '.join(ALL_ERAS)}) over each transport (memory, stdio, http); tasks=True "
        f"adds the eras' task columns ({', '.join(e + TASK_SUFFIX for e in TASK_ERAS)}: the calls run as tasks)",
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


class _Misuse(Exception):
    """A marker that cannot be read; reported on the marked test alone (see pytest_runtest_setup)."""


def _misuse(message: str) -> NoReturn:
    raise _Misuse(message)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """One case per era column and transport; a marker that cannot be read fails its own test
    when it runs (with the message alone), not the collection of the whole module."""
    try:
        _generate(metafunc)
    except _Misuse as exc:
        config = metafunc.config
        config.stash.setdefault(_BAD_MARKERS, {})[metafunc.definition.nodeid] = str(exc)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    bad = item.config.stash.get(_BAD_MARKERS, {}).get(item.nodeid)
    if bad is not None:
        pytest.fail(bad, pytrace=False)


def _generate(metafunc: pytest.Metafunc) -> None:
    marker = metafunc.definition.get_closest_marker(MARKER)
    if marker is None:
        return
    if "elicitkit" not in metafunc.fixturenames:
        _misuse(f"{metafunc.definition.nodeid}: @pytest.mark.{MARKER} needs the elicitkit fixture")
    from elicitkit.testing.kit.kit import Case

    where = f"{metafunc.definition.nodeid}: @pytest.mark.{MARKER}"
    transports = marker.kwargs.get("transports", ("memory",))
    if isinstance(transports, str):
        transports = (transports,)
    unknown = set(marker.kwargs) - {"transports", "tasks"}
    if unknown:
        _misuse(f"{where}: unknown option(s) {sorted(unknown)}; only transports= and tasks=")
    tasks = marker.kwargs.get("tasks", False)
    if not isinstance(tasks, bool):
        _misuse(f"{where}: tasks= is True or False, not {tasks!r}")
    columns = _columns(where, marker.args or ALL_ERAS, tasks)
    try:
        cases = [
            Case(era, transport, _case_id(era, task, transport, len(transports)), task)
            for transport in transports
            for era, task in columns
        ]
    except ValueError as exc:
        _misuse(f"{where}: {exc}")
    metafunc.parametrize("elicitkit_case", cases, ids=[case.id for case in cases])


def _columns(where: str, names: tuple[Any, ...], tasks: bool) -> list[tuple[str, bool]]:
    """(era, as a task) for each column: the eras named, each era's task column after it with
    ``tasks=True``, and a ``...-task`` name as that column alone."""
    columns: list[tuple[str, bool]] = []
    for name in names:
        if not isinstance(name, str):
            _misuse(f"{where}: eras are strings like {ALL_ERAS[-1]!r}, not {name!r}")
        wanted = [(name.removesuffix(TASK_SUFFIX), True)] if name.endswith(TASK_SUFFIX) else [(name, False)]
        if tasks and name in TASK_ERAS:
            wanted.append((name, True))
        columns += [column for column in wanted if column not in columns]
    if tasks and not any(task for _, task in columns):
        named = ", ".join(era for era, _ in columns)
        _misuse(f"{where}: tasks=True, but none of the eras named has tasks ({named}); they came with {TASK_ERAS[0]}")
    return columns


def _case_id(era: str, task: bool, transport: str, transports: int) -> str:
    column = era + TASK_SUFFIX if task else era
    return column if transports == 1 else f"{column}-{transport}"


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
    from elicitkit.testing.kit.kit import Kit, SnapshotLog

    config = request.config
    if _SNAPSHOTS not in config.stash:
        config.stash[_SNAPSHOTS] = SnapshotLog()
    node = request.node
    name = node.name.replace(f"[{elicitkit_case.id}]", f"[{elicitkit_case.era}]") if elicitkit_case.id else node.name
    test_file = Path(str(node.path))
    snapshots = test_file.parent / "__snapshots__" / test_file.stem / f"{name}.json"
    kit = Kit(
        elicitkit_case,
        snapshot_path=snapshots,
        update_snapshots=bool(request.config.getoption("--elicitkit-update-snapshots")),
        snapshot_log=config.stash[_SNAPSHOTS],
    )
    yield kit
    problems = kit.close()
    if problems and not node.stash.get(_DID_NOT_PASS, False):
        pytest.fail("elicitkit: the script was not played out:\n  " + "\n  ".join(problems), pytrace=False)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """With --elicitkit-update-snapshots: which snapshots were written, and which no test read."""
    log = config.stash.get(_SNAPSHOTS, None)
    if log is None or not config.getoption("--elicitkit-update-snapshots"):
        return
    root = Path(str(config.rootpath))

    def shown(path: Path) -> str:
        return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)

    terminalreporter.write_sep("-", "elicitkit snapshots")
    if log.written:
        terminalreporter.write_line(f"wrote {len(log.written)} snapshot(s):")
        for path in log.written:
            terminalreporter.write_line(f"  {shown(path)}")
    else:
        terminalreporter.write_line(f"wrote no snapshot: the {len(log.checked)} asserted were up to date")
    stale = log.stale()
    if stale:
        terminalreporter.write_line(
            f"{len(stale)} snapshot(s) that no test of this run asserted (stale, or their tests did not run):"
        )
        for path in stale:
            terminalreporter.write_line(f"  {shown(path)}")
