"""Prompts: functions whose parameters are the prompt's arguments and whose return value is messages.

python examples/prompts.py          # serve over stdio
python examples/prompts.py --demo   # connect in memory and show what a client sees
"""

from __future__ import annotations

import sys
from typing import Any

import anyio

from elicitkit import Client, MCPError, Server
from elicitkit.content import AssistantMessage, Message, UserMessage

server = Server("prompts-demo", "1.0.0")

LANGUAGES = ["python", "perl", "php", "rust", "ruby"]


@server.prompt(title="Code review")
def review_code(code: str, language: str = "python") -> str:
    """Ask for a review of a piece of code.

    Args:
        code: The code to review.
        language: The language it is written in.
    """
    return f"Please review this {language} code and point out bugs:\n\n{code}"


@server.prompt()
def debug_session(error: str) -> list[Message]:
    """Start a debugging conversation about an error."""
    return [
        UserMessage(f"I am seeing this error: {error}"),
        AssistantMessage("Let's work through it. What did you expect to happen?"),
    ]


@server.completion()
def complete(ref: dict[str, Any], argument: str, value: str, context: dict[str, Any]) -> list[str]:
    """Suggest languages for ``review_code``'s ``language`` argument."""
    if ref.get("name") == "review_code" and argument == "language":
        return [lang for lang in LANGUAGES if lang.startswith(value)]
    return []


async def main() -> None:
    async with Client(server) as client:
        for prompt in (await client.list_prompts()).prompts:
            arguments = ", ".join(f"{a.name}{'' if a.required else '?'}" for a in prompt.arguments or [])
            print(f"prompt {prompt.name}({arguments}): {prompt.description.splitlines()[0]}")
        review = await client.get_prompt("review_code", {"code": "print(1/0)"})
        print(f"review_code -> {review.messages[0].role}: {review.messages[0].content.text!r}")
        session = await client.get_prompt("debug_session", {"error": "KeyError: 'x'"})
        for message in session.messages:
            print(f"debug_session -> {message.role}: {message.content.text}")
        suggestions = await client.complete(
            {"type": "ref/prompt", "name": "review_code"}, {"name": "language", "value": "p"}
        )
        print("complete language='p' ->", suggestions.completion.values)
        try:
            await client.get_prompt("review_code", {"language": "rust"})
        except MCPError as exc:
            print(f"review_code without code -> error {exc.code}: {exc.message}")


if __name__ == "__main__":
    if "--demo" in sys.argv[1:]:
        anyio.run(main)
    else:
        server.run()
