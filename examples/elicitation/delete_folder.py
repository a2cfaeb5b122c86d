"""Delete a folder, asking "are you sure?" only when there is something to lose: a resolver.

python examples/elicitation/delete_folder.py          # serve over stdio
python examples/elicitation/delete_folder.py --demo   # an in-memory client answers the questions

``confirm`` is not an argument the client sends: it is filled by the resolver
``confirm_delete``, which runs before the tool body. It reads the tool's own ``path``
argument by name and returns ``Confirm(ok=True)`` straight away for an empty folder (no
question goes out), or ``Elicit(...)`` for the framework to ask. The tool takes the whole
outcome (``ElicitationResult[Confirm]``) and matches all four cases. ``empty_trash`` takes
the bare ``Confirm`` instead: a decline or cancel ends that call with an error, and its body
never runs.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any

import anyio
from pydantic import BaseModel, Field

from elicitkit import (
    AcceptedElicitation,
    CancelledElicitation,
    Client,
    DeclinedElicitation,
    Elicit,
    ElicitationResult,
    FormRequest,
    Resolve,
    Server,
    UrlRequest,
)

server = Server("files", "1.0.0", instructions="Deletes folders, asking first when they are not empty.")

FOLDERS: dict[str, list[str]] = {
    "/tmp/empty": [],
    "/tmp/project": ["main.py", "README.md"],
    "/tmp/notes": ["todo.txt"],
    "/tmp/photos": ["cat.jpg", "dog.jpg", "sea.jpg"],
    "/tmp/.trash": ["old.log"],
}


class Confirm(BaseModel):
    ok: bool = Field(description="Delete it?")


async def confirm_delete(path: str) -> Confirm | Elicit[Confirm]:
    """Resolver: ask for confirmation only when the folder is not empty."""
    file_count = len(FOLDERS.get(path, []))
    if file_count == 0:
        return Confirm(ok=True)  # nothing to confirm, no round trip to the client
    return Elicit(f"{path} has {file_count} file(s). Delete anyway?", Confirm)


@server.tool()
async def delete_folder(
    path: str,
    confirm: Annotated[ElicitationResult[Confirm], Resolve(confirm_delete)],
) -> str:
    """Delete a folder, asking for confirmation when it is not empty."""
    match confirm:
        case AcceptedElicitation(data=Confirm(ok=True)):
            FOLDERS.pop(path, None)
            return f"deleted {path}"
        case AcceptedElicitation():
            return "kept the folder"
        case DeclinedElicitation():
            return "declined: folder not deleted"
        case CancelledElicitation():
            return "cancelled: folder not deleted"
    raise AssertionError(f"not an elicitation outcome: {confirm!r}")  # pragma: no cover


def trash_path() -> str:
    """Resolver with no inputs: where the trash is."""
    return "/tmp/.trash"


def confirm_empty_trash(trash: Annotated[str, Resolve(trash_path)]) -> Confirm | Elicit[Confirm]:
    """Resolver depending on another resolver (a sync one): ask only when the trash holds files."""
    files = FOLDERS.get(trash, [])
    return Elicit(f"Empty the trash ({len(files)} file(s))?", Confirm) if files else Confirm(ok=True)


@server.tool()
def empty_trash(confirm: Annotated[Confirm, Resolve(confirm_empty_trash)]) -> str:
    """Empty the trash; declining or cancelling the question ends the call with an error."""
    if not confirm.ok:
        return "left the trash alone"
    removed = len(FOLDERS.get("/tmp/.trash", []))
    FOLDERS["/tmp/.trash"] = []
    return f"emptied the trash ({removed} file(s))"


# ----------------------------------------------------------------------------- the demo

ANSWERS: list[ElicitationResult[Any]] = [
    ElicitationResult.accept({"ok": True}),  # /tmp/project
    ElicitationResult.accept({"ok": False}),  # /tmp/notes
    ElicitationResult.decline(),  # /tmp/notes
    ElicitationResult.cancel(),  # /tmp/photos
    ElicitationResult.decline(),  # the trash
    ElicitationResult.accept({"ok": True}),  # the trash
]


async def answer(request: FormRequest | UrlRequest) -> ElicitationResult[Any]:
    assert isinstance(request, FormRequest)
    print(f"  asked: {request.message}")
    reply = ANSWERS.pop(0)
    print(f"  user: {reply.action} {reply.content or ''}".rstrip())
    return reply


async def main() -> None:
    async with Client(server, elicitation_callback=answer) as client:
        tool = next(t for t in (await client.list_tools()).tools if t.name == "delete_folder")
        print("delete_folder arguments:", ", ".join(tool.input_schema["properties"]))
        for path in ("/tmp/empty", "/tmp/project", "/tmp/notes", "/tmp/notes", "/tmp/photos"):
            print(f"delete_folder {path}")
            print("  ->", (await client.call_tool("delete_folder", {"path": path})).text)
        for _ in range(2):
            print("empty_trash")
            result = await client.call_tool("empty_trash")
            print("  ->", ("error: " if result.is_error else "") + result.text)
        print("folders left:", ", ".join(sorted(FOLDERS)))


if __name__ == "__main__":
    if "--demo" in sys.argv[1:]:
        anyio.run(main)
    elif sys.argv[1:2] == ["http"]:  # python delete_folder.py http PORT
        server.run("http", port=int(sys.argv[2]))
    else:
        server.run()
