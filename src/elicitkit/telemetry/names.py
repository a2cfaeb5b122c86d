"""Every attribute, event and metric name elicitkit emits, in one place (docs/telemetry.md).

The ``mcp.*``, ``jsonrpc.*``, ``gen_ai.*``, ``rpc.*``, ``network.*`` and ``error.type`` names
are the OpenTelemetry MCP semantic conventions' (semantic-conventions-genai, docs/gen-ai/mcp.md);
``elicitkit.*`` names are ours, for what the conventions do not cover yet (elicitation).
"""

from __future__ import annotations

# -- the MCP semantic conventions
MCP_METHOD_NAME = "mcp.method.name"
MCP_PROTOCOL_VERSION = "mcp.protocol.version"
MCP_SESSION_ID = "mcp.session.id"
MCP_RESOURCE_URI = "mcp.resource.uri"
JSONRPC_REQUEST_ID = "jsonrpc.request.id"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_PROMPT_NAME = "gen_ai.prompt.name"
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
RPC_RESPONSE_STATUS_CODE = "rpc.response.status_code"
ERROR_TYPE = "error.type"
NETWORK_TRANSPORT = "network.transport"
NETWORK_PROTOCOL_NAME = "network.protocol.name"

MCP_CLIENT_OPERATION_DURATION = "mcp.client.operation.duration"
MCP_SERVER_OPERATION_DURATION = "mcp.server.operation.duration"
MCP_CLIENT_SESSION_DURATION = "mcp.client.session.duration"
MCP_SERVER_SESSION_DURATION = "mcp.server.session.duration"

# -- elicitkit's: one question
ELICITATION_MODE = "elicitkit.elicitation.mode"  # form | url
ELICITATION_ACTION = "elicitkit.elicitation.action"  # accept | decline | cancel | error | invalid
ELICITATION_ERA = "elicitkit.elicitation.era"  # the protocol version the question was put on
ELICITATION_ROUND = "elicitkit.elicitation.round"  # 1 for the first attempt or round
ELICITATION_KEY = "elicitkit.elicitation.key"  # the question's key (q1, q2, or the tool's own)
ELICITATION_FIELDS = "elicitkit.elicitation.field_count"
ELICITATION_ORIGIN = "elicitkit.elicitation.origin"  # call | page | task
ELICITATION_TIME_TO_ANSWER = "elicitkit.elicitation.time_to_answer"  # seconds, on the event
ELICITATION_MESSAGE = "elicitkit.elicitation.message"  # opt-in only
ELICITATION_CONTENT = "elicitkit.elicitation.content"  # opt-in only (never a secret field's value)
ELICITATION_SIDE = "elicitkit.elicitation.side"  # server | client
ELICITATION_SERVER = "elicitkit.elicitation.server"  # client side: who asked
ELICITATION_REASON = "elicitkit.elicitation.reason"  # why the client's policy refused, if it did
CALL_ROUND = "elicitkit.round"  # on a 2026 call's server span: which round of the call this is
FALLBACK_REASON = "elicitkit.page.reason"  # why a question went to a page
TASK_ID = "elicitkit.task.id"

EVENT_ASKED = "elicitkit.elicitation.asked"
EVENT_ANSWERED = "elicitkit.elicitation.answered"

METRIC_TIME_TO_ANSWER = "elicitkit.elicitation.time_to_answer"
METRIC_QUESTIONS_PER_CALL = "elicitkit.call.questions"
METRIC_ROUNDS_PER_CALL = "elicitkit.call.rounds"
METRIC_OPEN_QUESTIONS = "elicitkit.elicitation.open"
METRIC_WAITING_TASKS = "elicitkit.tasks.waiting"
METRIC_PAGE_FALLBACKS = "elicitkit.page.fallbacks"
METRIC_FLEET_RELAYS = "elicitkit.fleet.relays"

# -- W3C trace context in params._meta (SEP-414: unprefixed keys)
PROPAGATION_KEYS = ("traceparent", "tracestate", "baggage")
