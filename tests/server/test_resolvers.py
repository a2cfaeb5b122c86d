"""Resolvers: ``Annotated[T, Resolve(fn)]`` parameters, filled (and asked for) before the tool body runs.

Most tests build a small server and drive it with :class:`elicitkit.Client` in memory, with a
scripted user and the client's ``trace=`` hook, so what is checked is what goes over the
wire. A few drive :func:`~elicitkit.server.resolvers.resolve` directly with their own
asker, which is how a connection that cannot ask mid-call will use it. The example
``examples/elicitation/delete_folder.py`` runs with ``--demo`` and as a stdio server.
"""

import functools
import inspect
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
import pytest
from pydantic import BaseModel, Field

import elicitkit
from elicitkit import (
    AcceptedElicitation,
    CancelledElicitation,
    Client,
    Context,
    DeclinedElicitation,
    Elicit,
    ElicitationResult,
    Resolve,
    SchemaError,
    Server,
    ToolError,
)
from elicitkit.elicitation.requests import FormRequest, UrlRequest
from elicitkit.server.resolvers import NotResolved, QuestionsPending, build_graph, resolve

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "elicitation" / "delete_folder.py"
STEP = 30.0  # a hang guard for one conversation (a cold interpreter start is slow when the machine is busy)

accept = ElicitationResult.accept
decline = ElicitationResult.decline
cancel = ElicitationResult.cancel


# ----------------------------------------------------------------------------- helpers


class User:
    """A scripted user: answers in order, remembers every question."""

    def __init__(self, *answers: ElicitationResult[Any] | Callable[[FormRequest], Any]) -> None:
        self.answers = list(answers)
        self.asked: list[FormRequest] = []

    async def __call__(self, request: FormRequest | UrlRequest) -> ElicitationResult[Any]:
        assert isinstance(request, FormRequest)
        self.asked.append(request)
        assert self.answers, f"unexpected question: {request.message!r}"
        answer = self.answers.pop(0)
        if isinstance(answer, ElicitationResult):
            return answer
        outcome = answer(request)
        result: ElicitationResult[Any] = await outcome if inspect.isawaitable(outcome) else outcome
        return result

    @property
    def messages(self) -> list[str]:
        return [request.message for request in self.asked]


class Wire:
    """``Client(trace=...)``: every message in and out."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, direction: str, message: dict[str, Any]) -> None:
        self.messages.append((direction, message))

    def received(self, method: str) -> list[dict[str, Any]]:
        return [m for d, m in self.messages if d == "recv" and m.get("method") == method]

    def clear(self) -> None:
        self.messages.clear()


class Confirm(BaseModel):
    ok: bool = Field(description="Delete it?")


class Address(BaseModel):
    street: str


class Nested(BaseModel):
    address: Address


def _selfish(me: "Annotated[str, Resolve(_selfish)]") -> str:  # a string: read when the tool is registered
    return me


def _loop(me: Annotated[str, Resolve(_selfish)]) -> str:
    return me


def files_server() -> tuple[Server, dict[str, list[str]]]:
    """Seed 001's delete_folder, plus a bare-``Confirm`` twin."""
    server = Server("files")
    folders: dict[str, list[str]] = {"/tmp/empty": [], "/tmp/project": ["main.py", "README.md"]}

    async def confirm_delete(path: str) -> Confirm | Elicit[Confirm]:
        file_count = len(folders.get(path, []))
        if file_count == 0:
            return Confirm(ok=True)
        return Elicit(f"{path} has {file_count} file(s). Delete anyway?", Confirm)

    @server.tool()
    async def delete_folder(path: str, confirm: Annotated[ElicitationResult[Confirm], Resolve(confirm_delete)]) -> str:
        """Delete a folder, asking for confirmation when it is not empty."""
        match confirm:
            case AcceptedElicitation(data=Confirm(ok=True)):
                folders.pop(path, None)
                return f"deleted {path}"
            case AcceptedElicitation():
                return "kept the folder"
            case DeclinedElicitation():
                return "declined: folder not deleted"
            case CancelledElicitation():
                return "cancelled: folder not deleted"
        raise AssertionError(confirm)

    @server.tool()
    async def delete_folder_strict(path: str, confirm: Annotated[Confirm, Resolve(confirm_delete)]) -> str:
        """The same question; the tool only wants the model."""
        assert isinstance(confirm, Confirm)
        if confirm.ok:
            folders.pop(path, None)
            return f"deleted {path}"
        return "kept the folder"

    return server, folders


async def call(client: Client, tool: str, arguments: dict[str, Any] | None = None) -> str:
    result = await client.call_tool(tool, arguments or {})
    assert not result.is_error, result.text
    return result.text


async def call_error(client: Client, tool: str, arguments: dict[str, Any] | None = None) -> str:
    result = await client.call_tool(tool, arguments or {})
    assert result.is_error, result.text
    return result.text


# ----------------------------------------------------------------------------- seed 001's delete_folder


async def test_resolved_parameters_are_not_in_the_input_schema() -> None:
    server, _ = files_server()
    async with Client(server) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    for name in ("delete_folder", "delete_folder_strict"):
        schema = tools[name].input_schema
        assert list(schema["properties"]) == ["path"]
        assert schema["required"] == ["path"]
    assert tools["delete_folder"].description == "Delete a folder, asking for confirmation when it is not empty."


async def test_an_empty_folder_resolves_without_asking() -> None:
    server, folders = files_server()
    wire, user = Wire(), User()
    with anyio.fail_after(STEP):
        async with Client(server, elicitation_callback=user, trace=wire) as client:
            assert await call(client, "delete_folder", {"path": "/tmp/empty"}) == "deleted /tmp/empty"
    assert wire.received("elicitation/create") == []
    assert user.asked == []
    assert "/tmp/empty" not in folders


async def test_a_non_empty_folder_asks_once() -> None:
    server, folders = files_server()
    wire, user = Wire(), User(accept({"ok": True}))
    with anyio.fail_after(STEP):
        async with Client(server, elicitation_callback=user, trace=wire) as client:
            assert await call(client, "delete_folder", {"path": "/tmp/project"}) == "deleted /tmp/project"
    (question,) = wire.received("elicitation/create")
    assert question["params"]["message"] == "/tmp/project has 2 file(s). Delete anyway?"
    assert question["params"]["requestedSchema"]["properties"]["ok"]["type"] == "boolean"
    assert question["params"]["requestedSchema"]["required"] == ["ok"]
    assert user.messages == ["/tmp/project has 2 file(s). Delete anyway?"]
    assert "/tmp/project" not in folders


async def test_the_tool_matches_all_four_outcomes() -> None:
    server, folders = files_server()
    user = User(accept({"ok": False}), decline(), cancel(), accept({"ok": True}))
    wire = Wire()
    with anyio.fail_after(STEP):
        async with Client(server, elicitation_callback=user, trace=wire) as client:
            texts = [await call(client, "delete_folder", {"path": "/tmp/project"}) for _ in range(4)]
    assert texts == [
        "kept the folder",
        "declined: folder not deleted",
        "cancelled: folder not deleted",
        "deleted /tmp/project",
    ]
    assert len(wire.received("elicitation/create")) == 4
    assert folders == {"/tmp/empty": []}


async def test_a_bare_model_annotation_aborts_on_decline_and_cancel() -> None:
    server, folders = files_server()
    user = User(decline(), cancel(), accept({"ok": False}), accept({"ok": True}))
    with anyio.fail_after(STEP):
        async with Client(server, elicitation_callback=user) as client:
            declined = await call_error(client, "delete_folder_strict", {"path": "/tmp/project"})
            cancelled = await call_error(client, "delete_folder_strict", {"path": "/tmp/project"})
            kept = await call(client, "delete_folder_strict", {"path": "/tmp/project"})
            deleted = await call(client, "delete_folder_strict", {"path": "/tmp/project"})
            empty = await call(client, "delete_folder_strict", {"path": "/tmp/empty"})
    assert declined == "delete_folder_strict: the user declined: /tmp/project has 2 file(s). Delete anyway?"
    assert cancelled == "delete_folder_strict: the user cancelled: /tmp/project has 2 file(s). Delete anyway?"
    assert (kept, deleted, empty) == ("kept the folder", "deleted /tmp/project", "deleted /tmp/empty")
    assert folders == {}


async def test_a_client_that_cannot_be_asked_gets_an_error_result() -> None:
    server, folders = files_server()
    async with Client(server) as client:  # no elicitation_callback: no elicitation capability
        text = await call_error(client, "delete_folder", {"path": "/tmp/project"})
        assert await call(client, "delete_folder", {"path": "/tmp/empty"}) == "deleted /tmp/empty"
    assert text.startswith("delete_folder: the client cannot be asked in form mode")
    assert "/tmp/project" in folders


# ----------------------------------------------------------------------------- dependencies


async def test_dependencies_of_dependencies_run_in_order_each_once() -> None:
    server = Server("deps")
    runs: list[str] = []

    def account_of(user_id: int) -> str:  # sync, from a tool argument
        runs.append("account")
        return f"acct-{user_id}"

    async def region() -> str:  # a dependency that is not a tool parameter
        runs.append("region")
        return "eu"

    async def plan_of(
        account: str, region: Annotated[str, Resolve(region)], amount: int
    ) -> str | Elicit[Literal["basic", "pro"]]:
        runs.append("plan")
        if amount < 100:
            return "basic"
        return Elicit(f"{account} in {region}: {amount} needs a plan.", Literal["basic", "pro"])

    def summary(account: str, plan: str, region: Annotated[str, Resolve(region)]) -> str:
        runs.append("summary")
        return f"{account}/{plan}/{region}"

    @server.tool()
    def charge(
        amount: int,
        user_id: int,
        summary: Annotated[str, Resolve(summary)],
        plan: Annotated[str, Resolve(plan_of)],
        account: Annotated[str, Resolve(account_of)],
    ) -> str:
        return f"{summary} charged {amount}"

    graph = server.tools["charge"].resolvers
    assert graph is not None
    assert graph.keys == ["account", "plan.region", "plan", "summary"]

    user = User(accept({"value": "pro"}))
    with anyio.fail_after(STEP):
        async with Client(server, elicitation_callback=user) as client:
            small = await call(client, "charge", {"amount": 5, "user_id": 7})
            assert runs == ["account", "region", "plan", "summary"]
            runs.clear()
            big = await call(client, "charge", {"amount": 500, "user_id": 8})
            assert runs == ["account", "region", "plan", "summary"]
            schema = (await client.list_tools()).tools[0].input_schema
    assert small == "acct-7/basic/eu charged 5"
    assert big == "acct-8/pro/eu charged 500"
    assert user.messages == ["acct-8 in eu: 500 needs a plan."]
    assert user.asked[0].requested_schema["properties"]["value"]["enum"] == ["basic", "pro"]
    assert sorted(schema["properties"]) == ["amount", "user_id"]


async def test_a_resolver_used_twice_runs_once() -> None:
    server = Server("twice")
    runs: list[int] = []

    def ask_name() -> Elicit[str]:
        runs.append(1)
        return Elicit("Your name?", str)

    @server.tool()
    def greet(
        name: Annotated[str, Resolve(ask_name)], outcome: Annotated[ElicitationResult[str], Resolve(ask_name)]
    ) -> str:
        assert isinstance(outcome, AcceptedElicitation)
        return f"hello {name} ({outcome.action})"

    user = User(accept({"value": "Ada"}))
    async with Client(server, elicitation_callback=user) as client:
        assert await call(client, "greet") == "hello Ada (accept)"
    assert runs == [1]
    assert len(user.asked) == 1


async def test_a_dependency_can_take_the_whole_outcome() -> None:
    server = Server("outcomes")

    def ask_reason() -> Elicit[str]:
        return Elicit("Why?", str)

    def explain(reason: ElicitationResult[str]) -> str:
        return reason.data if isinstance(reason, AcceptedElicitation) else f"no reason ({reason.action})"

    @server.tool()
    def report(
        reason: Annotated[ElicitationResult[str], Resolve(ask_reason)], text: Annotated[str, Resolve(explain)]
    ) -> str:
        return text

    user = User(accept({"value": "because"}), decline())
    async with Client(server, elicitation_callback=user) as client:
        assert await call(client, "report") == "because"
        assert await call(client, "report") == "no reason (decline)"


async def test_a_declined_dependency_stops_before_the_next_question() -> None:
    server = Server("stop")
    ran: list[str] = []

    def ask_first() -> Elicit[bool]:
        return Elicit("First?", bool)

    def second(first: Annotated[bool, Resolve(ask_first)]) -> Elicit[bool]:
        ran.append("second")
        return Elicit("Second?", bool)

    @server.tool()
    def both(answer: Annotated[ElicitationResult[bool], Resolve(second)]) -> str:
        ran.append("body")
        return "ran"

    user = User(cancel())
    async with Client(server, elicitation_callback=user) as client:
        text = await call_error(client, "both")
    assert text == "both: the user cancelled: First?"
    assert ran == []
    assert user.messages == ["First?"]


async def test_sync_resolvers_and_direct_outcomes() -> None:
    server = Server("sync")

    def always_declined() -> ElicitationResult[Any]:
        return DeclinedElicitation("no such thing")

    def known(n: int) -> int:
        return n * 2

    @server.tool()
    def sync_tool(n: int, doubled: Annotated[int, Resolve(known)]) -> str:
        return str(doubled)

    @server.tool()
    def refused(value: Annotated[int, Resolve(always_declined)]) -> str:
        raise AssertionError("never runs")

    async with Client(server) as client:
        assert await call(client, "sync_tool", {"n": 21}) == "42"
        assert await call_error(client, "refused") == "refused: the user declined: value (no such thing)"


async def test_a_resolver_can_use_the_context_and_raise_tool_errors() -> None:
    server = Server("ctx")

    async def who(ctx: Context) -> str:
        await ctx.info("resolving who")
        return str(ctx.client_info.get("name"))

    def checked(path: str, context: Context | None) -> str:
        assert context is not None
        if path == "/":
            raise ToolError("refusing to touch /")
        return f"{path} via {context.protocol_version}"

    def by_tool_context_name(ctx: Any) -> str:  # not annotated: the tool's own context parameter, by name
        assert isinstance(ctx, Context)
        return "named"

    @server.tool()
    async def whoami(
        path: str,
        ctx: Context,
        name: Annotated[str, Resolve(who)],
        where: Annotated[str, Resolve(checked)],
        named: Annotated[str, Resolve(by_tool_context_name)],
    ) -> str:
        await ctx.info("body")
        return f"{name} {where} {named}"

    logs: list[Any] = []
    async with Client(server, client_info={"name": "tester", "version": "1"}, logging_callback=logs.append) as client:
        await client.set_logging_level("debug")
        assert await call(client, "whoami", {"path": "/tmp"}) == "tester /tmp via 2025-11-25 named"
        assert await call_error(client, "whoami", {"path": "/"}) == "refusing to touch /"
    assert [entry["data"] for entry in logs][:2] == ["resolving who", "body"]


async def test_an_unanswered_question_is_an_error_result_not_an_internal_error() -> None:
    server = Server("slow")

    def ask() -> Elicit[bool]:
        return Elicit("Quick?", bool, timeout=0.2)

    @server.tool()
    def quick(ok: Annotated[bool, Resolve(ask)]) -> str:
        return "answered"

    async def never(request: FormRequest | UrlRequest) -> ElicitationResult[Any]:
        await anyio.sleep(5)
        return cancel()

    with anyio.fail_after(STEP):
        async with Client(server, elicitation_callback=never) as client:
            text = await call_error(client, "quick")
    assert text == "quick: no answer within 0.2s; the question was withdrawn"


async def test_a_tool_timeout_does_not_count_the_time_spent_asking() -> None:
    server = Server("timeouts")

    def ask() -> Elicit[bool]:
        return Elicit("Go?", bool)

    @server.tool(timeout=0.3)
    async def go(ok: Annotated[bool, Resolve(ask)]) -> str:
        return f"go={ok}"

    async def slow_yes(request: FormRequest | UrlRequest) -> ElicitationResult[Any]:
        await anyio.sleep(0.6)
        return accept({"value": True})

    with anyio.fail_after(STEP):
        async with Client(server, elicitation_callback=slow_yes) as client:
            assert await call(client, "go") == "go=True"


async def test_methods_partials_and_callable_objects_resolve_too() -> None:
    server = Server("callables")

    class Settings:
        prefix = ">"

        def tag(self, name: str) -> str:
            return f"{self.prefix}{name}"

        async def __call__(self, name: str, ctx: Context) -> str:
            return f"{name}@{ctx.protocol_version}"

    def scaled(name: str, factor: int) -> int:
        return len(name) * factor

    settings = Settings()

    @server.tool()
    def describe(
        name: str,
        tag: Annotated[str, Resolve(settings.tag)],
        at: Annotated[str, Resolve(settings)],
        size: Annotated[int, Resolve(functools.partial(scaled, factor=10))],
    ) -> str:
        return f"{tag} {at} {size}"

    async with Client(server) as client:
        assert await call(client, "describe", {"name": "abc"}) == ">abc abc@2025-11-25 30"


async def test_timeouts_inside_a_tool_body_are_error_results() -> None:
    """Framework fix that came with resolvers: a TimeoutError with no tool timeout set was an internal error."""
    server = Server("bodies")

    @server.tool()
    async def asks(ctx: Context) -> str:
        await ctx.elicit("Quick?", bool, timeout=0.2)
        return "answered"

    @server.tool()
    def own_timeout() -> str:
        raise TimeoutError("the disk is slow")

    async def never(request: FormRequest | UrlRequest) -> ElicitationResult[Any]:
        await anyio.sleep(5)
        return cancel()

    with anyio.fail_after(STEP):
        async with Client(server, elicitation_callback=never) as client:
            assert await call_error(client, "asks") == "asks: no answer within 0.2s; the question was withdrawn"
            assert await call_error(client, "own_timeout") == "Error executing tool own_timeout: the disk is slow"


# ----------------------------------------------------------------------------- Elicit and registration errors


def test_elicit_checks_its_schema_when_built() -> None:
    with pytest.raises(SchemaError, match="address"):
        Elicit("Where?", Nested)
    with pytest.raises(SchemaError):
        Elicit("What?", {"type": "object", "properties": {}})  # a dict is not a model or a type
    with pytest.raises(ValueError, match="max_attempts"):
        Elicit("Sure?", bool, max_attempts=0)
    question = Elicit("Sure?", Confirm, timeout=3.0, max_attempts=2)
    assert (question.message, question.schema, question.timeout, question.max_attempts) == ("Sure?", Confirm, 3.0, 2)
    assert question.form.schema["required"] == ["ok"]
    assert repr(question) == "Elicit('Sure?', Confirm)"


async def test_a_bad_elicit_built_at_call_time_is_an_error_result() -> None:
    server = Server("bad")

    def where() -> Any:  # no return annotation: nothing to check at registration
        return Elicit("Where?", Nested)

    @server.tool()
    def ship(address: Annotated[Any, Resolve(where)]) -> str:
        return "shipped"

    async with Client(server, elicitation_callback=User()) as client:
        text = await call_error(client, "ship")
    assert text.startswith("ship: invalid elicitation schema: field 'address'")


def test_a_cycle_is_refused_at_registration() -> None:
    server = Server("cycle")

    def resolve_a(b: str) -> str:
        return b

    def resolve_b(a: str) -> str:
        return a

    with pytest.raises(TypeError) as caught:

        @server.tool()
        def looped(a: Annotated[str, Resolve(resolve_a)], b: Annotated[str, Resolve(resolve_b)]) -> str:
            return a + b

    message = str(caught.value)
    assert "tool 'looped'" in message
    assert "cycle" in message
    assert "a (test_a_cycle_is_refused_at_registration.<locals>.resolve_a())" in message
    assert "b (test_a_cycle_is_refused_at_registration.<locals>.resolve_b())" in message
    assert "looped" not in server.tools


def test_a_resolver_depending_on_itself_is_a_cycle() -> None:
    server = Server("self")

    with pytest.raises(TypeError, match=r"cycle: value\.me \(_selfish\(\)\) -> value\.me"):

        @server.tool()
        def nested(value: Annotated[str, Resolve(_loop)]) -> str:
            return value

    def recursive(value: str) -> str:  # "value" is the tool's own resolved parameter: itself
        return value

    with pytest.raises(TypeError, match=r"cycle: value \(.*recursive\(\)\) -> value"):

        @server.tool()
        def direct(value: Annotated[str, Resolve(recursive)]) -> str:
            return value


def test_an_unknown_resolver_parameter_is_refused_at_registration() -> None:
    server = Server("unknown")

    def confirm_delete(pth: str) -> bool:
        return True

    with pytest.raises(TypeError) as caught:

        @server.tool()
        def delete_folder(path: str, confirm: Annotated[bool, Resolve(confirm_delete)]) -> str:
            return path

    message = str(caught.value)
    assert message.startswith("tool 'delete_folder': resolver ")
    assert "confirm_delete()" in message
    assert "parameter 'pth' is neither an argument of the tool nor a resolved value" in message
    assert "(those are: confirm, path)" in message
    assert "delete_folder" not in server.tools

    def with_default(path: str, verbose: bool = False) -> bool:  # a default fills what nothing else does
        return verbose

    @server.tool()
    def fine(path: str, confirm: Annotated[bool, Resolve(with_default)]) -> str:
        return path


def test_a_bad_schema_in_a_resolvers_elicit_is_refused_at_registration() -> None:
    server = Server("schema")

    def where() -> str | Elicit[Nested]:
        return Elicit("Where?", Nested)

    with pytest.raises(TypeError) as caught:

        @server.tool()
        def ship(address: Annotated[Any, Resolve(where)]) -> str:
            return "shipped"

    message = str(caught.value)
    assert "tool 'ship': resolver" in message
    assert "where()" in message
    assert "Elicit[Nested]" in message
    assert "nested model Address is not allowed" in message


def test_other_registration_errors() -> None:
    server = Server("errors")

    def positional(x: int, /) -> int:
        return x

    with pytest.raises(TypeError, match="parameter 'x' cannot be passed by name"):

        @server.tool()
        def uses_positional(x: int, y: Annotated[int, Resolve(positional)]) -> int:
            return y

    with pytest.raises(TypeError, match="Resolve\\(\\) needs a function"):
        Resolve(42)  # type: ignore[arg-type]

    with pytest.raises(TypeError, match="more than one Resolve"):

        @server.tool()
        def twice(y: Annotated[int, Resolve(lambda: 1), Resolve(lambda: 2)]) -> int:
            return y


def test_exports() -> None:
    assert elicitkit.Resolve is Resolve
    assert elicitkit.Elicit is Elicit
    assert {"Resolve", "Elicit"} <= set(elicitkit.__all__)
    from elicitkit import server as server_package

    assert {"Resolve", "Elicit"} <= set(server_package.__all__)


# ----------------------------------------------------------------------------- resolve() with another asker


def questions_graph() -> tuple[Server, list[str]]:
    server = Server("rounds")
    runs: list[str] = []

    def color() -> Elicit[str]:
        runs.append("color")
        return Elicit("Color?", str)

    def size() -> Elicit[int]:
        runs.append("size")
        return Elicit("Size?", int)

    def label(color: str, name: str) -> str:
        runs.append("label")
        return f"{name}:{color}"

    def gift(wrap: bool = False) -> bool:
        runs.append("gift")
        return wrap

    @server.tool()
    def order(
        name: str,
        color: Annotated[str, Resolve(color)],
        size: Annotated[ElicitationResult[int], Resolve(size)],
        label: Annotated[str, Resolve(label)],
        gift: Annotated[bool, Resolve(gift)],
    ) -> str:
        return label

    return server, runs


async def test_an_asker_that_defers_collects_every_independent_question() -> None:
    """What a stateless connection needs: all questions of a round at once, then the answers on a retry."""
    server, runs = questions_graph()
    graph = server.tools["order"].resolvers
    assert graph is not None

    async def defer(key: str, question: Elicit[Any]) -> ElicitationResult[Any]:
        raise QuestionsPending({key: question})

    with pytest.raises(QuestionsPending) as caught:
        await resolve(graph, {"name": "mug"}, None, defer)
    assert {key: q.message for key, q in caught.value.questions.items()} == {"color": "Color?", "size": "Size?"}
    assert runs == ["color", "size", "gift"]  # label needs the color: not run this round

    answers: dict[str, ElicitationResult[Any]] = {"color": accept({"value": "red"}, data="red"), "size": decline()}
    asked: list[str] = []

    async def answered(key: str, question: Elicit[Any]) -> ElicitationResult[Any]:
        asked.append(key)
        return answers[key]

    runs.clear()
    values = await resolve(graph, {"name": "mug"}, None, answered)
    assert values == {"color": "red", "size": DeclinedElicitation(), "label": "mug:red", "gift": False}
    assert asked == ["color", "size"]
    assert runs == ["color", "size", "label", "gift"]

    answers["color"] = cancel()
    with pytest.raises(NotResolved) as refused:
        await resolve(graph, {"name": "mug"}, None, answered)
    assert (refused.value.key, str(refused.value)) == ("color", "the user cancelled: Color?")


def test_build_graph_is_none_without_resolvers() -> None:
    server = Server("plain")

    @server.tool()
    def plain(x: int) -> int:
        return x

    tool = server.tools["plain"]
    assert tool.resolvers is None
    assert build_graph("plain", tool.plan) is None


# ----------------------------------------------------------------------------- the example


def test_the_example_demo_runs() -> None:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE), "--demo"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=STEP,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "delete_folder arguments: path",
        "delete_folder /tmp/empty",
        "  -> deleted /tmp/empty",
        "delete_folder /tmp/project",
        "  asked: /tmp/project has 2 file(s). Delete anyway?",
        "  user: accept {'ok': True}",
        "  -> deleted /tmp/project",
        "delete_folder /tmp/notes",
        "  asked: /tmp/notes has 1 file(s). Delete anyway?",
        "  user: accept {'ok': False}",
        "  -> kept the folder",
        "delete_folder /tmp/notes",
        "  asked: /tmp/notes has 1 file(s). Delete anyway?",
        "  user: decline",
        "  -> declined: folder not deleted",
        "delete_folder /tmp/photos",
        "  asked: /tmp/photos has 3 file(s). Delete anyway?",
        "  user: cancel",
        "  -> cancelled: folder not deleted",
        "empty_trash",
        "  asked: Empty the trash (1 file(s))?",
        "  user: decline",
        "  -> error: empty_trash: the user declined: Empty the trash (1 file(s))?",
        "empty_trash",
        "  asked: Empty the trash (1 file(s))?",
        "  user: accept {'ok': True}",
        "  -> emptied the trash (1 file(s))",
        "folders left: /tmp/.trash, /tmp/notes, /tmp/photos",
    ]


async def test_the_example_over_stdio() -> None:
    user = User(accept({"ok": False}), decline(), cancel(), accept({"ok": True}), cancel())
    wire = Wire()
    with anyio.fail_after(STEP):
        async with Client([sys.executable, str(EXAMPLE)], elicitation_callback=user, trace=wire) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert list(tools["delete_folder"].input_schema["properties"]) == ["path"]
            assert tools["empty_trash"].input_schema["properties"] == {}
            empty = await call(client, "delete_folder", {"path": "/tmp/empty"})
            assert wire.received("elicitation/create") == []
            kept = await call(client, "delete_folder", {"path": "/tmp/project"})
            declined = await call(client, "delete_folder", {"path": "/tmp/project"})
            cancelled = await call(client, "delete_folder", {"path": "/tmp/project"})
            deleted = await call(client, "delete_folder", {"path": "/tmp/project"})
            trash = await call_error(client, "empty_trash")
    assert (empty, kept, declined, cancelled, deleted) == (
        "deleted /tmp/empty",
        "kept the folder",
        "declined: folder not deleted",
        "cancelled: folder not deleted",
        "deleted /tmp/project",
    )
    assert trash == "empty_trash: the user cancelled: Empty the trash (1 file(s))?"
    assert user.messages == ["/tmp/project has 2 file(s). Delete anyway?"] * 4 + ["Empty the trash (1 file(s))?"]
    assert len(wire.received("elicitation/create")) == 5


# ----------------------------------------------------------------------------- the Context a call makes for them


class Sure(BaseModel):
    ok: bool


def confirm_question() -> Elicit[Sure]:
    return Elicit("Sure?", Sure)


def test_the_graph_knows_whether_a_resolver_takes_the_context() -> None:
    server = Server("graph")

    def plain(n: int) -> int:
        return n

    def with_context(ctx: Context) -> int:
        return 1

    @server.tool()
    def none_take_it(n: int, a: Annotated[int, Resolve(plain)]) -> int:
        return a

    @server.tool()
    def one_takes_it(n: int, a: Annotated[int, Resolve(plain)], b: Annotated[int, Resolve(with_context)]) -> int:
        return a + b

    graphs = {name: server.tools[name].resolvers for name in ("none_take_it", "one_takes_it")}
    assert graphs["none_take_it"] is not None and graphs["none_take_it"].takes_context is False
    assert graphs["one_takes_it"] is not None and graphs["one_takes_it"].takes_context is True


@pytest.mark.parametrize("mode", ["legacy", "modern"])
async def test_a_servers_own_context_still_asks_a_resolvers_question(mode: str) -> None:
    """A call makes no Context for resolvers that take none, unless the server makes its own
    (``context_for``): then the questions go through that Context's ``elicit``, as before."""
    asked: list[str] = []

    class LoggingContext(Context):
        __slots__ = ()

        def elicit(self, message: str, schema: Any, **options: Any) -> Any:
            asked.append(message)
            return super().elicit(message, schema, **options)

    class OwnServer(Server):
        def context_for(self, scope: Any) -> Context:
            return LoggingContext(scope, self)

    server = OwnServer("own")

    @server.tool()
    def go(confirm: Annotated[Sure, Resolve(confirm_question)]) -> str:
        return f"ok={confirm.ok}"

    async with Client(server, mode=mode, elicitation_callback=User(accept({"ok": True}))) as client:
        assert await call(client, "go") == "ok=True"
    # 2026: the resolver runs again on the retry, and asks through the server's Context again
    assert asked == (["Sure?"] if mode == "legacy" else ["Sure?", "Sure?"])


async def test_a_context_for_set_on_the_instance_is_used_for_resolvers() -> None:
    asked: list[str] = []
    server = Server("instance")

    class Noting(Context):
        __slots__ = ()

        def elicit(self, message: str, schema: Any, **options: Any) -> Any:
            asked.append(message)
            return super().elicit(message, schema, **options)

    server.context_for = lambda scope: Noting(scope, server)  # type: ignore[method-assign]

    @server.tool()
    def go(confirm: Annotated[Sure, Resolve(confirm_question)]) -> str:
        return f"ok={confirm.ok}"

    async with Client(server, mode="modern", elicitation_callback=User(accept({"ok": True}))) as client:
        assert await call(client, "go") == "ok=True"
    assert asked == ["Sure?", "Sure?"]
