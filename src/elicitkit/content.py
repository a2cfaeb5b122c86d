"""What tools, resources and prompts return besides plain values: content blocks and messages.

>>> from elicitkit.content import Image, UserMessage
>>> @server.tool()
... def logo() -> Image:
...     return Image(path="logo.png")
>>> @server.prompt()
... def review(code: str) -> list[UserMessage]:
...     return [UserMessage(f"Review this code:\n{code}")]
"""

from __future__ import annotations

from elicitkit.server.content import Audio, EmbeddedResource, Image, ResourceLink, Text
from elicitkit.server.prompts import AssistantMessage, Message, UserMessage

__all__ = ["AssistantMessage", "Audio", "EmbeddedResource", "Image", "Message", "ResourceLink", "Text", "UserMessage"]
