"""The era matrix's task column: the same test body with the kit's calls run as tasks (pytester).

``tasks=True`` adds ``2026-07-28-task`` after 2026-07-28; ``"2026-07-28-task"`` names that
column alone. There ``elicitkit.call`` / ``elicitkit.call_tool`` go ``tools/call`` -> a task ->
``tasks/get`` (input_required) -> ``tasks/update`` -> the result; a tool that gives no task
fails the test with a message that says what to do.
"""

from __future__ import annotations

import pytest

from ._pytester import run_file

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.timeout(120)

SERVER = """
import pytest
from pydantic import BaseModel
from elicitkit import AcceptedElicitation, Context, Server
from elicitkit.testing.kit import accept, decline

server = Server("shop")
runs = []


class Size(BaseModel):
    x: int


@server.tool(task="optional", task_poll_interval_ms=5000)  # the kit does not wait 5 s between polls
async def order(ctx: Context) -> str:
    runs.append(ctx.request_id)
    size = await ctx.elicit("How big?", Size)
    if not isinstance(size, AcceptedElicitation):
        return f"no order ({size.action})"
    sure = await ctx.elicit(f"Order size {size.data.x}?", bool)
    return "ordered" if isinstance(sure, AcceptedElicitation) and sure.data else "not ordered"


@server.tool(task="required", ask_before_task=True)
async def early(ctx: Context) -> str:
    sure = await ctx.elicit("Go?", bool)
    if not (isinstance(sure, AcceptedElicitation) and sure.data):
        return "stopped before the task"
    await ctx.run_as_task()
    return "ran as a task"


@server.tool()
async def quick(ctx: Context) -> str:
    sure = await ctx.elicit("Sure?", bool)
    return f"quick: {sure.action}"
"""


def run(pytester: pytest.Pytester, tests: str, *args: str) -> pytest.RunResult:
    return run_file(pytester, SERVER + tests, *args)


def test_tasks_true_adds_the_task_column_and_the_calls_go_through_a_task(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
@pytest.mark.elicitkit_eras(tasks=True)
async def test_order(elicitkit):
    elicitkit.person.will(accept({"x": 2}), decline())
    assert (await elicitkit.call(server, "order")).text == "not ordered"
    elicitkit.asked.assert_messages("How big?", "Order size 2?")
    assert len(elicitkit.task_ids) == (1 if elicitkit.task else 0)
    assert elicitkit.era == ("2026-07-28" if elicitkit.task else elicitkit.era)


@pytest.mark.elicitkit_eras("2026-07-28-task", transports=("memory", "stdio", "http"))
async def test_only_as_a_task(elicitkit):
    elicitkit.person.will(accept({"x": 3}), accept({"value": True}))
    async with elicitkit.connect(server) as client:
        assert (await elicitkit.call_tool(client, "order")).text == "ordered"
        task = await client.get_task(elicitkit.task_ids[0])  # a real task on the server
    assert elicitkit.task and elicitkit.modern and task["status"] == "completed"


@pytest.mark.elicitkit_eras("2026-07-28-task")
async def test_asked_before_the_task(elicitkit):  # "required": a plain call would be refused (-32021)
    elicitkit.person.will(accept({"value": True}))
    assert (await elicitkit.call(server, "early")).text == "ran as a task"
    assert len(elicitkit.task_ids) == 1
""",
        "-v",
    )
    outcomes = result.parseoutcomes()
    assert outcomes == {"passed": 8}, result.stdout.str()[-4000:]
    result.stdout.fnmatch_lines_random(
        [
            "*test_order?2025-06-18? PASSED*",
            "*test_order?2025-11-25? PASSED*",
            "*test_order?2026-07-28? PASSED*",
            "*test_order?2026-07-28-task? PASSED*",
            "*test_only_as_a_task?2026-07-28-task-memory? PASSED*",
            "*test_only_as_a_task?2026-07-28-task-stdio? PASSED*",
            "*test_only_as_a_task?2026-07-28-task-http? PASSED*",
            "*test_asked_before_the_task?2026-07-28-task? PASSED*",
        ]
    )


def test_a_tool_that_gives_no_task_fails_with_what_to_do(pytester: pytest.Pytester) -> None:
    result = run(
        pytester,
        """
@pytest.mark.elicitkit_eras(tasks=True)
async def test_quick(elicitkit):
    elicitkit.person.will(accept({"value": True}))
    assert (await elicitkit.call(server, "quick")).text == "quick: accept"


@pytest.mark.elicitkit_eras("2026-07-28-task")
async def test_early_no(elicitkit):
    elicitkit.person.will(decline())
    await elicitkit.call(server, "early")
""",
        "-v",
    )
    result.assert_outcomes(passed=3, failed=2)
    result.stdout.fnmatch_lines_random(
        [
            "*test_quick?2026-07-28? PASSED*",
            "*test_quick?2026-07-28-task? FAILED*",
            "E *AssertionError: elicitkit: this case (2026-07-28-task) calls 'quick' as a task, "
            "but 'shop' answered with a plain result: 'quick' is not task-capable.",
            'E *Register it with @server.tool(task="optional") (or task="required") to test it as a task,',
            "E *or keep this test out of the task column (drop tasks=True or '2026-07-28-task' from its marker).",
            "E *AssertionError: elicitkit: this case (2026-07-28-task) calls 'early' as a task, but 'shop' answered "
            "with a plain result: it has ask_before_task=True and returned before calling ctx.run_as_task().",
        ]
    )
    # The failure points at the test's own line, not into the kit.
    assert "kit.py" not in result.stdout.str()


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        (
            '"2025-06-18", "2025-11-25", tasks=True',
            "*tasks=True, but none of the eras named has tasks (2025-06-18, 2025-11-25); they came with 2026-07-28",
        ),
        ('"2025-11-25-task"', "*2025-11-25 has no tasks: the Tasks extension exists on 2026-07-28 only"),
        ('tasks="yes"', "*tasks= is True or False, not 'yes'"),
        (
            '"2027-01-01-task"',
            "*unknown era '2027-01-01'; the kit knows 2025-06-18, 2025-11-25, 2026-07-28, 2026-07-28-task",
        ),
    ],
)
def test_a_wrong_task_column_fails_collection_with_the_reason(
    pytester: pytest.Pytester, marker: str, message: str
) -> None:
    result = run(
        pytester,
        f"""
@pytest.mark.elicitkit_eras({marker})
async def test_order(elicitkit):
    pass
""",
    )
    assert result.ret != 0
    result.stdout.fnmatch_lines([message])
    assert "Traceback" not in result.stdout.str()


def test_the_task_column_shares_the_eras_snapshot(pytester: pytest.Pytester) -> None:
    """A task asks the same questions as its era's plain call: one snapshot file for both."""
    tests = """
@pytest.mark.elicitkit_eras("2026-07-28", tasks=True)
async def test_order(elicitkit):
    elicitkit.person.will(accept({"x": 2}), decline())
    await elicitkit.call(server, "order")
    elicitkit.assert_snapshot()
"""
    run(pytester, tests, "--elicitkit-update-snapshots").assert_outcomes(passed=2)
    assert sorted(p.name for p in (pytester.path / "__snapshots__" / "test_shop").iterdir()) == [
        "test_order[2026-07-28].json"
    ]
    run(pytester, tests).assert_outcomes(passed=2)


def test_the_plugin_and_the_kit_know_the_same_task_eras() -> None:
    import elicitkit_pytest
    from elicitkit.testing.kit.serving import TASK_ERAS, TASK_SUFFIX

    assert elicitkit_pytest.TASK_ERAS == TASK_ERAS
    assert elicitkit_pytest.TASK_SUFFIX == TASK_SUFFIX
