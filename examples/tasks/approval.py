"""A task that asks a person for approval, and finishes after a restart.

The ``deploy`` tool runs as a task (Tasks extension, MCP 2026-07-28): it asks whether to deploy,
and only then deploys. The task waits in ``input_required`` with nothing in memory (its record
sits in a SQLite file), so the server may be stopped and started again before anyone answers.

    python examples/tasks/approval.py serve --port 8000     # tasks in $ELICITKIT_TASK_DB
    elicitkit call http://127.0.0.1:8000/mcp deploy -a service=web --task --detach   # prints TASK_ID
    # ... restart the server whenever you like ...
    elicitkit tasks answer http://127.0.0.1:8000/mcp TASK_ID

    python examples/tasks/approval.py --demo    # the same story in one process, two servers
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import anyio
from pydantic import BaseModel, Field

from elicitkit import AcceptedElicitation, Client, Context, ElicitationResult, FormRequest, Server, UrlRequest
from elicitkit.tasks import SQLiteTaskStore, TaskHandle, TaskStore


class Approval(BaseModel):
    approve: bool = Field(description="Deploy now?")
    note: str = Field(default="", description="Anything the deployer should know")


def build_server(store: TaskStore | None = None) -> Server:
    """``store``: where tasks live (default: SQLite at $ELICITKIT_TASK_DB or the state directory)."""
    server = Server("approvals", task_store=store)

    @server.tool(task="optional", task_poll_interval_ms=200)
    async def deploy(service: str, ctx: Context) -> str:
        """Deploy ``service`` once a person approves (runs as a task for clients that support it)."""
        answer = await ctx.elicit(f"Deploy {service} to production?", Approval, key="approval")
        if not (isinstance(answer, AcceptedElicitation) and answer.data.approve):
            return f"{service}: not deployed"
        # Everything below the last question runs exactly once, even across restarts.
        note = f" ({answer.data.note})" if answer.data.note else ""
        return f"{service}: deployed{note}"

    return server


async def approve(request: FormRequest | UrlRequest) -> ElicitationResult[dict[str, object]]:
    """The person, in the demo: says yes, with a note."""
    print(f"  asked: {request.message}")
    return ElicitationResult.accept({"approve": True, "note": "after the restart"})


async def demo() -> None:
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "tasks.db"
        first = build_server(SQLiteTaskStore(db))
        async with Client(first, mode="modern") as client:
            handle = await client.start_task("deploy", {"service": "web"})
            assert isinstance(handle, TaskHandle)
            print(f"task created: {handle.status}")
            while (task := await client.get_task(handle.task_id))["status"] != "input_required":  # noqa: ASYNC110 (polling the server)
                await anyio.sleep(0.05)
            print(f"waiting for: {', '.join(task['inputRequests'])}")
        await first.tasks.aclose()
        await first.tasks.store.close()
        print("server stopped; a new one starts on the same file")

        second = build_server(SQLiteTaskStore(db))
        async with Client(second, mode="modern", elicitation_callback=approve) as client:
            result = await client.follow_task(handle.task_id)
        await second.tasks.aclose()
        await second.tasks.store.close()
        print(f"result: {result.text}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", nargs="?", choices=["serve"], help="serve over HTTP")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--demo", action="store_true", help="run the story in one process")
    args = parser.parse_args()
    if args.demo:
        anyio.run(demo)
    elif args.command == "serve":
        build_server().run("http", port=args.port)
    else:
        parser.print_help()


if __name__ == "__main__":
    main()
