"""Prompts: functions whose arguments the client fills in and whose return value is messages."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from elicitkit.server.content import CONTENT_TYPES, to_content
from elicitkit.server.tools import FunctionPlan, plan_function


@dataclass(slots=True)
class Message:
    """One prompt message; ``content`` is text or any content helper."""

    content: Any
    role: Literal["user", "assistant"] = "user"

    def to_wire(self) -> dict[str, Any]:
        blocks = to_content(self.content)
        if len(blocks) != 1:
            raise ValueError("a prompt message holds exactly one content block")
        return {"role": self.role, "content": blocks[0]}


def UserMessage(content: Any) -> Message:
    return Message(content, "user")


def AssistantMessage(content: Any) -> Message:
    return Message(content, "assistant")


def render_messages(value: Any) -> list[dict[str, Any]]:
    """A prompt function's return value as ``GetPromptResult.messages``."""
    items = value if isinstance(value, (list, tuple)) else [value]
    messages: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, Message):
            messages.append(item.to_wire())
        elif isinstance(item, dict) and "role" in item and "content" in item:
            messages.append(item)
        elif isinstance(item, (str, *CONTENT_TYPES)):
            messages.append(Message(item).to_wire())
        else:
            raise TypeError(f"a prompt cannot return {type(item).__name__}; return text, content or Message objects")
    return messages


@dataclass
class Prompt:
    name: str
    plan: FunctionPlan
    title: str | None = None
    description: str | None = None

    def arguments(self) -> list[dict[str, Any]]:
        out = []
        for field_name, info in self.plan.arguments_model.model_fields.items():
            arg: dict[str, Any] = {"name": field_name, "required": info.is_required()}
            if info.description:
                arg["description"] = info.description
            out.append(arg)
        return out

    def definition(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.title:
            out["title"] = self.title
        if self.description:
            out["description"] = self.description
        args = self.arguments()
        if args:
            out["arguments"] = args
        return out


def make_prompt(
    fn: Callable[..., Any], *, name: str | None = None, title: str | None = None, description: str | None = None
) -> Prompt:
    prompt_name = name or fn.__name__
    plan = plan_function(fn, model_name=f"{prompt_name}_prompt_arguments")
    return Prompt(prompt_name, plan, title, description if description is not None else plan.description)
