"""The client under test for the official MCP conformance suite.

The harness runs ``python -m elicitkit.testing.conformance_client <server-url>`` with the
scenario name in ``MCP_CONFORMANCE_SCENARIO`` (and, from 0.2.x on, the protocol version in
``MCP_CONFORMANCE_PROTOCOL_VERSION`` and scenario data in ``MCP_CONFORMANCE_CONTEXT``).
Each scenario is a short coroutine doing what a real client would. The era follows the
protocol version: a handshake version (or none) means the legacy client, anything else the
2026-07-28 client (no handshake, an envelope and ``Mcp-*`` headers on every request).

The ``auth/*`` scenarios connect with an ``elicitkit.auth`` object (``OAuth`` with a
:class:`~elicitkit.testing.redirects.RedirectFollower` standing in for the person,
``ClientCredentials``, ``EnterpriseManaged``, ``WorkloadIdentity``), list the tools and call
one; credentials the suite hands out come from ``MCP_CONFORMANCE_CONTEXT``. A scenario that
expects a refusal ends with the ``AuthError`` logged and exit status 1.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from elicitkit import Client
from elicitkit.auth import AuthError, AuthProvider, ClientCredentials, EnterpriseManaged, OAuth, WorkloadIdentity
from elicitkit.client.rounds import InputRequiredResult
from elicitkit.elicitation.requests import ElicitRequest, FormRequest
from elicitkit.elicitation.results import ElicitationResult
from elicitkit.protocol.versions import LEGACY_VERSIONS
from elicitkit.testing.redirects import RedirectFollower

Scenario = Callable[[str, dict[str, Any]], Awaitable[None]]
SCENARIOS: dict[str, Scenario] = {}

log = logging.getLogger("elicitkit.conformance")


def scenario(*names: str) -> Callable[[Scenario], Scenario]:
    def register(fn: Scenario) -> Scenario:
        for name in names:
            SCENARIOS[name] = fn
        return fn

    return register


def _client(url: str, **kwargs: Any) -> Client:
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION") or None
    if version is None or version in LEGACY_VERSIONS:
        era: dict[str, Any] = {"mode": "legacy"}
    else:
        era = {"mode": "modern", "protocol_version": version}
    kwargs.setdefault("timeout", 30)
    # The suites run their scenarios in parallel: on a busy 2-core machine a first answer can take
    # longer than the default 10 s probe (this is about the machine, not the server).
    kwargs.setdefault("discover_timeout", 60)
    return Client(url, client_info={"name": "elicitkit-conformance-client", "version": "0.1.0"}, **era, **kwargs)


async def _accept(request: ElicitRequest) -> ElicitationResult[Any]:
    """Say yes to every form, with ``true`` for each boolean the form asks for."""
    if not isinstance(request, FormRequest):
        return ElicitationResult.decline()
    props = request.requested_schema.get("properties") or {}
    return ElicitationResult.accept({k: True for k, v in props.items() if v.get("type") == "boolean"})


async def _sample(params: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": "ok"}, "model": "none"}


@scenario("initialize")
async def initialize(url: str, context: dict[str, Any]) -> None:
    async with _client(url) as client:
        log.info("connected: %s %s", client.protocol_version, client.server_info)
        await client.list_tools()


@scenario("tools_call")
async def tools_call(url: str, context: dict[str, Any]) -> None:
    async with _client(url) as client:
        tools = await client.list_tools()
        names = [tool.name for tool in tools.tools]
        if "add_numbers" not in names:
            raise SystemExit(f"add_numbers not offered (tools: {names})")
        result = await client.call_tool("add_numbers", {"a": 5, "b": 3})
        log.info("add_numbers -> %s", result.text)


@scenario("sse-retry")
async def sse_retry(url: str, context: dict[str, Any]) -> None:
    async with _client(url) as client:
        result = await client.call_tool("test_reconnection", {})
        log.info("test_reconnection -> %s", result.text)


@scenario("json-schema-2020-12-preservation")
async def json_schema_preservation(url: str, context: dict[str, Any]) -> None:
    async with _client(url) as client:
        tools = await client.list_tools()
        tool = next((t for t in tools.tools if t.name == "json_schema_2020_12_tool"), None)
        if tool is None:
            raise SystemExit("json_schema_2020_12_tool not offered")
        await client.call_tool("json_schema_echo", {"schema": tool.input_schema})


@scenario("elicitation-sep1034-client-defaults", "elicitation-defaults")
async def elicitation_defaults(url: str, context: dict[str, Any]) -> None:
    """Accept without typing anything: the client fills every schema default in (SEP-1034)."""

    async def accept_defaults(request: ElicitRequest) -> ElicitationResult[Any]:
        return ElicitationResult.accept({})

    async with _client(url, elicitation_callback=accept_defaults) as client:
        result = await client.call_tool("test_client_elicitation_defaults", {})
        log.info("test_client_elicitation_defaults -> %s", result.text)


@scenario("request-metadata")
async def request_metadata(url: str, context: dict[str, Any]) -> None:
    """Every capability declared, so each is checked to be an object; the first request is refused."""
    async with _client(url, elicitation_callback=_accept, sampling_callback=_sample, roots=[]) as client:
        log.info("connected: %s %s", client.protocol_version, client.server_info)
        await client.list_tools()


@scenario("sep-2322-client-request-state")
async def mrtr_request_state(url: str, context: dict[str, Any]) -> None:
    async with _client(url, elicitation_callback=_accept) as client:
        await client.list_tools()
        # Manual mode: keep the round, make an unrelated call meanwhile, then resume.
        pending = await client.call_tool("test_mrtr_echo_state", {}, input_required="return")
        if not isinstance(pending, InputRequiredResult):
            raise SystemExit(f"test_mrtr_echo_state did not ask for input: {pending}")
        unrelated = await client.call_tool("test_mrtr_unrelated", {})
        log.info("test_mrtr_unrelated -> %s", unrelated.text)
        responses = await client.answer_input_requests(pending)
        done = await client.resume_tool(
            "test_mrtr_echo_state", pending.params.get("arguments"), responses, pending.request_state
        )
        log.info("test_mrtr_echo_state -> %s", done.text)
        # Automatic mode for the rest.
        log.info("test_mrtr_no_state -> %s", (await client.call_tool("test_mrtr_no_state", {})).text)
        log.info("test_mrtr_no_result_type -> %s", (await client.call_tool("test_mrtr_no_result_type", {})).text)


@scenario("http-standard-headers")
async def standard_headers(url: str, context: dict[str, Any]) -> None:
    async with _client(url) as client:
        tools = await client.list_tools()
        for tool in tools.tools:
            await client.call_tool(tool.name, {})
        resources = await client.list_resources()
        for resource in resources.resources:
            await client.read_resource(resource.uri)
        prompts = await client.list_prompts()
        for prompt in prompts.prompts:
            await client.get_prompt(prompt.name)


@scenario("http-custom-headers")
async def custom_headers(url: str, context: dict[str, Any]) -> None:
    async with _client(url) as client:
        await client.list_tools()  # learns which arguments go into Mcp-Param-* headers
        for call in context.get("toolCalls") or []:
            result = await client.call_tool(call["name"], call.get("arguments") or {})
            log.info("%s -> %s", call["name"], result.text)


@scenario("http-invalid-tool-headers")
async def invalid_tool_headers(url: str, context: dict[str, Any]) -> None:
    async with _client(url) as client:
        tools = await client.list_tools()  # tools with invalid x-mcp-header are dropped here
        for tool in tools.tools:
            properties = tool.input_schema.get("properties") or {}
            arguments = {name: "us-west1" for name, prop in properties.items() if prop.get("type") == "string"}
            result = await client.call_tool(tool.name, arguments)
            log.info("%s -> %s", tool.name, result.text)


@scenario("json-schema-ref-no-deref")
async def ref_no_deref(url: str, context: dict[str, Any]) -> None:
    """Schemas stay plain dicts: nothing here resolves a ``$ref``, least of all over the network."""
    async with _client(url) as client:
        tools = await client.list_tools()
        log.info("tools: %s", [tool.name for tool in tools.tools])


# The client ID metadata document URL the suite expects a client to offer (basic-cimd).
CIMD_URL = "https://conformance-test.local/client-metadata.json"

AUTH_CODE_SCENARIOS = (
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/resource-mismatch",
    "auth/offline-access-scope",
    "auth/offline-access-not-supported",
    "auth/authorization-server-migration",
    "auth/iss-supported",
    "auth/iss-not-advertised",
    "auth/iss-supported-missing",
    "auth/iss-wrong-issuer",
    "auth/iss-unexpected",
    "auth/iss-normalized",
    "auth/metadata-issuer-mismatch",
)


async def _use_protected(url: str, auth: AuthProvider) -> None:
    """What a user of a protected server does: connect, list the tools, call one."""
    # The first request carries the whole flow (discovery, registration, consent, token): on a
    # loaded machine running a suite's scenarios in parallel that can take longer than a request.
    async with _client(url, auth=auth, timeout=100) as client:
        tools = await client.list_tools()
        log.info("tools: %s", [tool.name for tool in tools.tools])
        result = await client.call_tool("test-tool", {})
        log.info("test-tool -> %s", result.text)


def _oauth(**options: Any) -> OAuth:
    return OAuth(client_name="elicitkit-conformance-client", authorizer=RedirectFollower(), **options)


@scenario(*AUTH_CODE_SCENARIOS)
async def auth_code(url: str, context: dict[str, Any]) -> None:
    await _use_protected(url, _oauth(client_metadata_url=CIMD_URL))


@scenario("auth/pre-registration")
async def pre_registration(url: str, context: dict[str, Any]) -> None:
    await _use_protected(url, _oauth(client_id=context["client_id"], client_secret=context["client_secret"]))


@scenario("auth/dpop", "auth/dpop-nonce")
async def dpop(url: str, context: dict[str, Any]) -> None:
    await _use_protected(url, _oauth(client_metadata_url=CIMD_URL, dpop=True))


@scenario("auth/client-credentials-jwt")
async def client_credentials_jwt(url: str, context: dict[str, Any]) -> None:
    auth = ClientCredentials(
        client_id=context["client_id"],
        private_key=context["private_key_pem"],
        signing_alg=context.get("signing_algorithm"),
    )
    await _use_protected(url, auth)


@scenario("auth/client-credentials-basic")
async def client_credentials_basic(url: str, context: dict[str, Any]) -> None:
    await _use_protected(url, ClientCredentials(client_id=context["client_id"], client_secret=context["client_secret"]))


@scenario("auth/enterprise-managed-authorization", "auth/cross-app-access-complete-flow")
async def enterprise_managed(url: str, context: dict[str, Any]) -> None:
    auth = EnterpriseManaged(
        id_token=context["idp_id_token"],
        idp_token_endpoint=context["idp_token_endpoint"],
        idp_client_id=context["idp_client_id"],
        client_id=context["client_id"],
        client_secret=context["client_secret"],
    )
    await _use_protected(url, auth)


@scenario("auth/wif-jwt-bearer")
async def workload_identity(url: str, context: dict[str, Any]) -> None:
    await _use_protected(url, WorkloadIdentity(assertion=context["valid_jwt"], client_id=context["client_id"]))


async def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: python -m elicitkit.testing.conformance_client <server-url>", file=sys.stderr)
        return 2
    url = argv[-1]
    name = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    fn = SCENARIOS.get(name)
    if fn is None:
        print(f"unknown scenario {name!r}; known: {', '.join(sorted(SCENARIOS))}", file=sys.stderr)
        return 2
    try:
        await fn(url, context)
    except AuthError as exc:  # the scenarios that test refusals end here, with the reason
        log.error("refused: %s: %s", type(exc).__name__, exc)
        return 1
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(name)s: %(message)s")
    sys.exit(anyio.run(main, sys.argv))
