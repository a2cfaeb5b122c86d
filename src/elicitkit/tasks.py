"""Long-running tools that ask (the MCP Tasks extension), in one import.

>>> @server.tool(task="optional")
... async def deploy(service: str, ctx: Context) -> str:
...     if (await ctx.elicit(f"Deploy {service}?", bool)).data:   # the task waits in input_required
...         return "deployed"
...     return "cancelled"
>>> server = Server("ops", task_store=SQLiteTaskStore("tasks.db"))   # waiting tasks survive a restart
>>> handle = await client.start_task("deploy", {"service": "api"})   # or call_tool(..., task=True)
"""

from __future__ import annotations

from elicitkit.client.tasks import TaskCancelled, TaskHandle
from elicitkit.server.tasks import InMemoryTaskStore, SQLiteTaskStore, TaskStore

__all__ = ["InMemoryTaskStore", "SQLiteTaskStore", "TaskCancelled", "TaskHandle", "TaskStore"]
