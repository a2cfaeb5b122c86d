"""The plugin as a user meets it: the marker, the fixture, and the messages of failing tests (pytester)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from ._pytester import SHOP_SERVER, run_file

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.timeout(120)

SERVER = SHOP_SERVER


def run(pytester: pytest.Pytester, tests: str, *args: str) -> pytest.RunResult:
    return run_file(pytester, SERVER + tests, *args)


def test_the_marker_runs_the_test_once_per_era(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
@pytest.mark.elicitkit_eras()
async def test_order(elicitkit):
    elicitkit.person.will(accept({"x": 2}), accept({"value": True}))
    assert (await elicitkit.call(server, "order")).text == "ordered"

@pytest.mark.elicitkit_eras("2026-07-28", transports=("memory", "http"))
async def test_modern(elicitkit):
    elicitkit.person.will(decline())
    assert (await elicitkit.call(server, "order")).text == "no order (decline)"
""",
        "-v",
    )
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(
        [
            "*test_order?2025-06-18? PASSED*",
            "*test_order?2025-11-25? PASSED*",
            "*test_order?2026-07-28? PASSED*",
            "*test_modern?2026-07-28-memory? PASSED*",
            "*test_modern?2026-07-28-http? PASSED*",
        ]
    )


def test_an_answer_never_used_is_named_at_teardown(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
async def test_order(elicitkit):
    elicitkit.person.will(decline(), accept({'x': 1}))
    elicitkit.person.when("Never asked?", cancel())
    assert (await elicitkit.call(server, "order")).text == "no order (decline)"
""",
    )
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*elicitkit: the script was not played out:",
            "*scripted answer #2 (accept {'x': 1}) was never used",
            "*answer(s) cancel for questions message 'Never asked?' were never used",
        ]
    )


def test_a_question_the_script_did_not_foresee_fails_the_test(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
async def test_order(elicitkit):
    elicitkit.person.will(accept({"x": 3}))
    async with elicitkit.connect(server) as client:
        result = await client.call_tool("order")
    assert result.text == "not ordered"  # the unexpected question was cancelled
""",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: the scripted person was asked what the script did not foresee:",
            "*unexpected question #2: 'Order size 3?' (form, fields: value); all 1 queued answer(s) were used already",
        ]
    )
    assert "was not played out" not in result.stdout.str()  # no second report at teardown


def test_an_unexpected_question_is_noted_on_the_tests_own_failure(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
async def test_order(elicitkit):
    async with elicitkit.connect(server) as client:
        await client.call_tool("order")
        assert False, "the test's own failure"
""",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*the test's own failure*",
            "*elicitkit: unexpected question #1: 'How big?' (form, fields: x); "
            "the script has no answers (person.will(...) / person.when(...))",
        ]
    )


def test_a_schema_mismatch_shows_a_diff_in_the_report(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
async def test_order(elicitkit):
    elicitkit.person.will(cancel())
    await elicitkit.call(server, "order")
    elicitkit.asked[0].assert_schema({"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]})
""",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*question #1 'How big?': the requested schema differs:",
            "*--- expected schema",
            "*+++ asked schema",
            '*-      "type": "number"',
            '*+      "type": "integer"',
        ]
    )


def test_the_marker_needs_the_fixture_and_known_eras(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
@pytest.mark.elicitkit_eras()
def test_without_fixture():
    pass
""",
    )
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*test_without_fixture: @pytest.mark.elicitkit_eras needs the elicitkit fixture*"])

    result = run(
        pytester,
        """
@pytest.mark.elicitkit_eras("2024-11-05")
def test_old(elicitkit):
    pass
""",
    )
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*unknown era '2024-11-05'; the kit knows 2025-06-18, 2025-11-25, 2026-07-28*"])


def test_a_bad_marker_fails_its_own_test_only(pytester: pytest.Pytester) -> None:
    """Issue 26.14: one bad marker used to break the collection of the whole module."""
    tests = """
@pytest.mark.elicitkit_eras("2024-11-05")
async def test_old(elicitkit):
    pass

@pytest.mark.elicitkit_eras(transport="http")
async def test_typo(elicitkit):
    pass

@pytest.mark.elicitkit_eras("2025-11-25")
async def test_good(elicitkit):
    elicitkit.person.will(decline())
    assert (await elicitkit.call(server, "order")).text == "no order (decline)"
"""
    result = run(pytester, tests)
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of test_old*",
            "test_shop.py::test_old: @pytest.mark.elicitkit_eras: unknown era '2024-11-05'*",
            "*ERROR at setup of test_typo*",
            "test_shop.py::test_typo: @pytest.mark.elicitkit_eras: unknown option(s) ['transport'];"
            " only transports= and tasks=",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    only_good = run(pytester, tests, "test_shop.py::test_good[2025-11-25]")  # a good test's node id runs
    only_good.assert_outcomes(passed=1)


def test_the_plugin_leaves_other_tests_alone(pytester: pytest.Pytester) -> None:
    tests = """
def test_plain(request):
    assert "elicitkit_case" not in request.fixturenames
    assert request.node.get_closest_marker("anyio") is None

async def test_async_without_the_kit():
    pass
"""
    with_kit = run(pytester, tests)
    without = pytester.runpytest("-p", "no:elicitkit", "-p", "no:cacheprovider")
    with_kit.assert_outcomes(passed=1, failed=1)  # the async test is not picked up by the kit...
    without.assert_outcomes(passed=1, failed=1)  # ... exactly as without it
    with_kit.stdout.fnmatch_lines(["*async def functions are not natively supported*"])
    assert "elicitkit_case" not in pytester.runpytest("--fixtures-per-test").stdout.str()


def test_snapshots_are_written_with_the_flag_then_compared(pytester: pytest.Pytester) -> None:
    tests = """
@pytest.mark.elicitkit_eras("2025-06-18", "2026-07-28")
async def test_order(elicitkit):
    elicitkit.person.will(accept({"x": 2}), decline())
    await elicitkit.call(server, "order")
    elicitkit.assert_snapshot()
"""
    missing = run(pytester, tests)
    missing.assert_outcomes(failed=2)
    missing.stdout.fnmatch_lines(
        [
            "*AssertionError: no snapshot test_order?2025-06-18?.json (in *__snapshots__*test_shop);"
            " the questions asked:",
            "*+++ asked questions",
            '*+    "message": "How big?",',
            "*(run pytest --elicitkit-update-snapshots to write it)",
        ]
    )

    written = run(pytester, tests, "--elicitkit-update-snapshots")
    written.assert_outcomes(passed=2)
    written.stdout.fnmatch_lines(  # a summary of what was written (issue 26.13)
        [
            "*elicitkit snapshots*",
            "wrote 2 snapshot(s):",
            "  __snapshots__/test_shop/test_order[[]2025-06-18].json",
            "  __snapshots__/test_shop/test_order[[]2026-07-28].json",
        ]
    )
    stored = pytester.path / "__snapshots__" / "test_shop" / "test_order[2026-07-28].json"
    assert json.loads(stored.read_text()) == [
        {
            "message": "How big?",
            "mode": "form",
            "requestedSchema": {
                "properties": {"x": {"title": "X", "type": "integer"}},
                "required": ["x"],
                "type": "object",
            },
        },
        {
            "message": "Order size 2?",
            "mode": "form",
            "requestedSchema": {
                "properties": {"value": {"title": "Value", "type": "boolean"}},
                "required": ["value"],
                "type": "object",
            },
        },
    ]
    run(pytester, tests).assert_outcomes(passed=2)

    changed = tests.replace('accept({"x": 2})', 'accept({"x": 7})')
    outdated = run(pytester, changed)
    outdated.assert_outcomes(failed=2)
    outdated.stdout.fnmatch_lines(
        [
            "*the questions differ from the snapshot test_order?2025-06-18?.json:",
            '*-    "message": "Order size 2?",',
            '*+    "message": "Order size 7?",',
            "*(run pytest --elicitkit-update-snapshots if the change is intended)",
        ]
    )


def test_loading_the_plugin_imports_only_pytest() -> None:
    """pytest loads the entry point in every run of every project that has elicitkit installed."""
    code = "import sys, elicitkit_pytest; print(sorted(m for m in sys.modules if m.startswith('elicitkit')))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert loaded.stdout.strip() == "['elicitkit_pytest']"


def test_the_plugin_and_the_kit_know_the_same_eras() -> None:
    import elicitkit_pytest
    from elicitkit.testing.kit import ERAS

    assert elicitkit_pytest.ALL_ERAS == ERAS
