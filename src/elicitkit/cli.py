"""The ``elicitkit`` command: call any MCP server's tools and answer its questions, serve, demo.

    elicitkit call SERVER [TOOL] [--arg k=v ...] [--ui terminal|browser|ci] [--defaults FILE] [--task [--detach]]
    elicitkit auth login|status|logout SERVER_URL
    elicitkit tasks get|answer|cancel SERVER TASK_ID
    elicitkit serve MODULE:SERVER [--transport stdio|http] [--port N] [--redis URL] [--auth-issuer URL ...]
    elicitkit gateway CONFIG [--transport stdio|http] [--port N]
    elicitkit demo [--ui terminal|browser|ci]

SERVER is a command line (run as a child over stdio) or an ``http(s)://`` URL (Streamable
HTTP). Without TOOL, ``call`` lists the server's tools. An HTTP server that answers 401 gets an
OAuth sign-in in the browser (``--no-browser``: the address is printed), kept for the next call.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import json
import shlex
import sys
import tomllib
from pathlib import Path
from typing import Any, cast

import anyio
import click

from elicitkit.cli_auth import NO_BROWSER_HELP, auth, http_auth
from elicitkit.cli_connections import connections
from elicitkit.cli_gateway import gateway
from elicitkit.cli_tools import tool_json, tool_lines
from elicitkit.client.client import Client, ClientMode
from elicitkit.client.connect import ModernNotSupported, ServerUnreachable
from elicitkit.client.handlers.ci import CIHandler
from elicitkit.client.handlers.policy import AuditLog, Policy, RateLimit
from elicitkit.client.responder import QuestionRefused
from elicitkit.client.results import CallToolResult, ImageContent, TextContent, Tool
from elicitkit.client.tasks import TaskHandle
from elicitkit.errors import AuthError
from elicitkit.protocol.errors import MCPError
from elicitkit.protocol.versions import Era

UI_CHOICES = ("auto", "terminal", "browser", "ci")


def _target(server: str) -> str | list[str]:
    if server.startswith(("http://", "https://")):
        return server
    argv = shlex.split(server)
    if not argv:
        raise click.BadParameter("empty server command", param_hint="SERVER")
    return argv


def _load_defaults(path: str | None) -> dict[str, Any]:
    if path is None:
        return {}
    try:
        text = Path(path).read_text(encoding="utf-8")
        data = tomllib.loads(text) if path.endswith(".toml") else json.loads(text)
    except (OSError, ValueError) as exc:  # TOMLDecodeError and JSONDecodeError are ValueErrors
        raise click.BadParameter(f"{path}: {exc}", param_hint="--defaults") from None
    if not isinstance(data, dict):
        raise click.BadParameter(f"{path} must hold an object of field name -> value", param_hint="--defaults")
    return data


def make_handler(ui: str, defaults: dict[str, Any], plain: bool = False) -> Any:
    """The handler for ``--ui``; ``auto`` is the terminal form on a terminal, CI defaults otherwise.

    ``plain``: the terminal form in plain lines (no boxes, no colours, no line editing).
    """
    if ui == "auto":
        ui = "terminal" if plain or (sys.stdin.isatty() and sys.stdout.isatty()) else "ci"
    if ui == "ci":
        return CIHandler(defaults)
    if ui == "terminal":
        from elicitkit.client.handlers.terminal import TerminalHandler

        return TerminalHandler(plain=True if plain else None)
    from elicitkit.client.handlers.browser import BrowserHandler

    return BrowserHandler()


def _schema_types(prop: Any) -> list[str]:
    """The JSON types a parameter allows: its ``type`` (a name or a list), else those of its ``anyOf``/``oneOf``."""
    if not isinstance(prop, dict):
        return []
    kind = prop.get("type")
    if isinstance(kind, str):
        return [kind]
    if isinstance(kind, list):
        return [k for k in kind if isinstance(k, str)]
    types: list[str] = []
    for option in [*prop.get("anyOf", []), *prop.get("oneOf", [])]:
        types += [t for t in _schema_types(option) if t not in types]
    return types


def _as_type(kind: str, raw: str) -> Any:
    if kind == "string":
        return raw
    if kind == "integer":
        return int(raw)
    if kind == "number":
        return float(raw)
    if kind == "boolean":
        low = raw.lower()
        if low in ("true", "yes", "1", "on"):
            return True
        if low in ("false", "no", "0", "off"):
            return False
        raise ValueError(f"not a boolean: {raw!r}")
    if kind == "null":
        if raw == "null":
            return None
        raise ValueError("not null")
    value = json.loads(raw)
    if kind == "array" and not isinstance(value, list):
        raise ValueError("not a JSON array")
    if kind == "object" and not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


def _coerce(name: str, raw: str, schema: dict[str, Any]) -> Any:
    """``--arg`` text -> the type the tool's input schema asks for (JSON, else text, when it says nothing).

    An optional parameter (``anyOf`` a type and null) takes ``null`` as None and anything else
    as that type; text is tried as a string last, so ``5`` for ``int | str`` is the number.
    """
    types = _schema_types(schema.get("properties", {}).get(name, {}))
    if not types:
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    ordered = sorted(types, key=lambda kind: kind == "string")
    errors: list[str] = []
    for kind in ordered:
        try:
            return _as_type(kind, raw)
        except ValueError as exc:
            errors.append(str(exc))
    wanted = " or ".join(types)
    detail = "; ".join(error for kind, error in zip(ordered, errors, strict=True) if kind != "null")
    raise click.BadParameter(f"{name}={raw!r}: the tool wants {wanted} ({detail})", param_hint="--arg")


def _arguments(pairs: tuple[str, ...], args_json: str | None, tool: Tool | None) -> dict[str, Any]:
    arguments: dict[str, Any] = {}
    if args_json:
        try:
            loaded = json.loads(args_json)
        except ValueError as exc:
            raise click.BadParameter(str(exc), param_hint="--args-json") from None
        if not isinstance(loaded, dict):
            raise click.BadParameter("must be a JSON object", param_hint="--args-json")
        arguments.update(loaded)
    schema = tool.input_schema if tool else {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{pair!r} is not KEY=VALUE", param_hint="--arg")
        arguments[name] = _coerce(name, raw, schema)
    return arguments


def _auth_option(server: str, no_browser: bool) -> dict[str, Any]:
    """``auth=`` for an http(s) SERVER (OAuth, idle until a 401); nothing for a command line."""
    auth_ = http_auth(server, no_browser)
    return {} if auth_ is None else {"auth": auth_}


async def _all_tools(client: Client) -> list[Tool]:
    tools: list[Tool] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


def _print_result(result: CallToolResult, as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps(result.model_dump(by_alias=True, exclude_none=True), indent=2, ensure_ascii=False))
        return
    for block in result.content:
        if isinstance(block, TextContent):
            click.echo(block.text)
        elif isinstance(block, ImageContent):
            click.echo(f"[image {block.mime_type}, {len(block.data) * 3 // 4} bytes]")
        else:
            click.echo(json.dumps(block.model_dump(by_alias=True, exclude_none=True), ensure_ascii=False))
    if result.structured_content is not None and not result.content:
        click.echo(json.dumps(result.structured_content, indent=2, ensure_ascii=False))


def _print_tools(client: Client, tools: list[Tool], as_json: bool) -> None:
    origin = client.origin
    if as_json:
        server = {"name": origin.name, "title": origin.title, "version": origin.version, "location": origin.location}
        listing = {"server": server, "tools": [tool_json(t) for t in tools]}
        click.echo(json.dumps(listing, indent=2, ensure_ascii=False))
        return
    version = f" {origin.version}" if origin.version else ""
    click.echo(f"{origin.display_name}{version} ({origin.location}): {len(tools)} tool(s)")
    for listed in tools:
        click.echo("\n".join(tool_lines(listed)))
    if tools:
        where = shlex.quote(origin.location) if origin.location else "SERVER"
        click.echo(f"Call one: elicitkit call {where} {tools[0].name} -a NAME=VALUE ...")


async def _call(
    server: str,
    tool_name: str | None,
    pairs: tuple[str, ...],
    args_json: str | None,
    handler: Any,
    mode: str,
    as_json: bool,
    timeout: float,
    task: bool = False,
    detach: bool = False,
    no_browser: bool = False,
) -> int:
    async with Client(
        _target(server),
        mode=cast(ClientMode, mode),
        elicitation_callback=handler,
        auto_url_elicitation=True,
        timeout=timeout,
        **_auth_option(server, no_browser),
    ) as client:
        tools = await _all_tools(client)
        if tool_name is None:
            _print_tools(client, tools, as_json)
            return 0
        tool = next((t for t in tools if t.name == tool_name), None)
        if tool is None:
            names = ", ".join(t.name for t in tools) or "none"
            raise click.UsageError(f"the server has no tool {tool_name!r} (it has: {names})")
        arguments = _arguments(pairs, args_json, tool)
        try:
            if detach:  # hands-off: print the task id; answer later with `elicitkit tasks answer`
                started = await client.start_task(tool_name, arguments)
                if isinstance(started, TaskHandle):
                    click.echo(
                        json.dumps({"taskId": started.task_id, "status": started.status})
                        if as_json
                        else started.task_id
                    )
                    return 0
                result = started
            else:
                result = await client.call_tool(tool_name, arguments, task=task)
        except MCPError:
            _hint_modern(client, mode)
            raise
        _print_result(result, as_json)
        if result.is_error:
            _hint_modern(client, mode)
        return 1 if result.is_error else 0


def _hint_modern(client: Client, mode: str) -> None:
    """A failed call on 2026-07-28 chosen by --mode auto/modern: the usual cause, and the fix."""
    if mode != "legacy" and client.era is Era.MODERN:
        click.echo(
            "hint: this call ran on 2026-07-28. Servers built on the official SDK or FastMCP answer"
            " server/discover but cannot ask questions on it; try --mode legacy.",
            err=True,
        )


class _SayRefusals:
    """The Policy's sensitive-field refusal, told to the person at the shell (it goes to the server
    in the server's terms): which fields, and the flag that lets the form through."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    async def aclose(self) -> None:
        """Close what the policy wraps (the browser form's last page), as ``_call_closing`` expects."""
        closing = getattr(self.policy, "aclose", None)
        if closing is not None:
            await closing()

    async def __call__(self, request: Any) -> Any:
        try:
            return await self.policy(request)
        except QuestionRefused as exc:
            if exc.data and exc.data.get("reason") == "sensitive_fields":
                fields = ", ".join(exc.data.get("fields", ()))
                click.echo(
                    f"refused: the server's form asks for {fields}, which look like secrets; elicitkit does not"
                    " collect those through forms. If you trust this server, rerun with --allow-sensitive.",
                    err=True,
                )
            raise


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="elicitkit")
def main() -> None:
    """elicitkit: MCP servers that ask, clients that answer."""


@main.command()
@click.argument("server")
@click.argument("tool", required=False)
@click.option("--arg", "-a", "pairs", multiple=True, metavar="KEY=VALUE", help="A tool argument (repeatable).")
@click.option("--args-json", metavar="JSON", help="All arguments as one JSON object.")
@click.option("--ui", type=click.Choice(UI_CHOICES), default="auto", show_default=True, help="Who answers questions.")
@click.option("--defaults", type=click.Path(exists=True, dir_okay=False), help="JSON/TOML field defaults (ci).")
@click.option(
    "--mode",
    type=click.Choice(["legacy", "auto", "modern"]),
    default="legacy",
    show_default=True,
    help="Protocol era: legacy (the initialize handshake), auto (probe server/discover), modern (2026-07-28).",
)
@click.option(
    "--rate",
    type=click.FloatRange(min=0, min_open=True),
    metavar="N",
    help="At most N questions a minute from this server.",
)
@click.option("--allow-sensitive", is_flag=True, help="Let forms ask for passwords, tokens, card numbers.")
@click.option("--audit", type=click.Path(dir_okay=False), help="Append one JSON line per question here.")
@click.option("--json", "as_json", is_flag=True, help="JSON on stdout: the tool listing, or the raw tool result.")
@click.option("--timeout", type=float, default=600.0, show_default=True, help="Seconds per request.")
@click.option("--plain", is_flag=True, help="Terminal form in plain lines: no boxes, colours or line editing.")
@click.option("--task", is_flag=True, help="Run as a task (2026-07-28 Tasks extension; implies --mode modern).")
@click.option("--detach", is_flag=True, help="With --task: print the task id and return at once.")
@click.option("--no-browser", is_flag=True, help=NO_BROWSER_HELP)
def call(
    server: str,
    tool: str | None,
    pairs: tuple[str, ...],
    args_json: str | None,
    ui: str,
    defaults: str | None,
    mode: str,
    rate: float | None,
    allow_sensitive: bool,
    audit: str | None,
    as_json: bool,
    timeout: float,
    plain: bool,
    task: bool,
    detach: bool,
    no_browser: bool,
) -> None:
    """Call TOOL on SERVER (a command line or an http(s) URL) and answer its questions; no TOOL lists tools."""
    if audit:
        try:  # find out now, not when the first question comes and the answer would be an error
            open(audit, "a", encoding="utf-8").close()
        except OSError as exc:
            raise click.BadParameter(f"cannot write {audit}: {exc.strerror}", param_hint="--audit") from None
    handler = _SayRefusals(
        Policy(
            make_handler(ui, _load_defaults(defaults), plain),
            rate_limit=RateLimit(rate) if rate else None,
            sensitive_fields=not allow_sensitive,
            audit=AuditLog(audit) if audit else None,
        )
    )
    if detach and not task:
        raise click.UsageError("--detach needs --task")
    if task:
        mode = "modern"
    args = (server, tool, pairs, args_json, handler, mode, as_json, timeout, task, detach, no_browser)
    sys.exit(_run_reporting(server, _call_closing, *args, as_json=as_json, tasks_only=task))


async def _call_closing(*args: Any) -> int:
    """:func:`_call`, then its handler closed (the browser form's last page stops reloading itself
    first, so the tab stays readable after this process is gone)."""
    handler = args[4]
    try:
        return await _call(*args)
    finally:
        closing = getattr(handler, "aclose", None)
        if closing is not None:
            await closing()


def _run_reporting(server: str, fn: Any, *args: Any, as_json: bool = False, tasks_only: bool = False) -> int:
    """Run a command's coroutine; failures become one clear line on stderr and exit code 2
    (with ``--json``, also ``{"error": ..., "exitCode": 2}`` on stdout, for a script)."""
    try:
        code: int = anyio.run(fn, *args)
        return code
    except ModernNotSupported as exc:
        said = exc.message.split("; connect with", 1)[0]
        fix = "tasks need a server that speaks 2026-07-28" if tasks_only else "try --mode legacy"
        said = f"{said}; {fix}"
    except ServerUnreachable as exc:  # its message says what failed and what to try
        said = exc.message
    except MCPError as exc:
        said = f"{exc.message} ({exc.code})"
    except AuthError as exc:  # says what was wrong and what to do; never a token or a code
        said = str(exc)
    except OSError as exc:
        verb = "reach" if isinstance(_target(server), str) else "start"
        said = f"could not {verb} {server}: {exc}"
    except click.ClickException:
        raise
    except Exception as exc:  # a clear line, not a traceback: this is a command for people
        said = f"{type(exc).__name__}: {exc}"
    click.echo(f"error: {said}", err=True)
    if as_json:
        click.echo(json.dumps({"error": said, "exitCode": 2}, ensure_ascii=False))
    return 2


@main.group()
def tasks() -> None:
    """Look at, answer or cancel a task on a 2026-07-28 server (`call --task --detach` made it)."""


async def _task_command(server: str, action: str, task_id: str, handler: Any, as_json: bool, timeout: float) -> int:
    options = _auth_option(server, no_browser=False)
    async with Client(
        _target(server), mode="modern", elicitation_callback=handler, timeout=timeout, **options
    ) as client:
        if action == "get":
            click.echo(json.dumps(await client.get_task(task_id), indent=2, ensure_ascii=False))
            return 0
        if action == "cancel":
            await client.cancel_task(task_id)
            said = {"taskId": task_id, "cancelRequested": True}
            click.echo(json.dumps(said) if as_json else f"cancel requested for {task_id}")
            return 0
        result = await client.follow_task(task_id)
        _print_result(result, as_json)
        return 1 if result.is_error else 0


JSON_OPTION = click.option("--json", "as_json", is_flag=True, help="Machine-readable output (JSON on stdout).")


@tasks.command("get")
@click.argument("server")
@click.argument("task_id")
@JSON_OPTION
def tasks_get(server: str, task_id: str, as_json: bool) -> None:
    """Print the task as the server shows it (status, and its result, error or open questions), as JSON."""
    code = _run_reporting(
        server, _task_command, server, "get", task_id, None, True, 60.0, as_json=as_json, tasks_only=True
    )
    sys.exit(code)


@tasks.command("answer")
@click.argument("server")
@click.argument("task_id")
@click.option("--ui", type=click.Choice(UI_CHOICES), default="auto", show_default=True, help="Who answers questions.")
@click.option("--defaults", type=click.Path(exists=True, dir_okay=False), help="JSON/TOML field defaults (ci).")
@click.option("--json", "as_json", is_flag=True, help="Print the raw tool result as JSON.")
@click.option("--plain", is_flag=True, help="Terminal form in plain lines: no boxes, colours or line editing.")
def tasks_answer(server: str, task_id: str, ui: str, defaults: str | None, as_json: bool, plain: bool) -> None:
    """Answer the task's questions as they come and print its result when it ends."""
    handler = _SayRefusals(Policy(make_handler(ui, _load_defaults(defaults), plain)))
    args = (server, "answer", task_id, handler, as_json, 600.0)
    sys.exit(_run_reporting(server, _task_command, *args, as_json=as_json, tasks_only=True))


@tasks.command("cancel")
@click.argument("server")
@click.argument("task_id")
@JSON_OPTION
def tasks_cancel(server: str, task_id: str, as_json: bool) -> None:
    """Ask the server to cancel the task."""
    args = (server, "cancel", task_id, None, as_json, 60.0)
    sys.exit(_run_reporting(server, _task_command, *args, as_json=as_json, tasks_only=True))


def load_server(target: str) -> Any:
    """``package.module:attr`` or ``path/to/file.py:attr`` (attr defaults to ``server``) -> the server."""
    module_part, _, attr = target.partition(":")
    attr = attr or "server"
    if module_part.endswith(".py") or "/" in module_part:
        path = Path(module_part).resolve()
        if not path.is_file():
            raise click.BadParameter(f"no such file: {module_part}", param_hint="MODULE:SERVER")
        spec = importlib.util.spec_from_file_location(path.stem, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[path.stem] = module
        sys.path.insert(0, str(path.parent))
        spec.loader.exec_module(module)
    else:
        sys.path.insert(0, str(Path.cwd()))
        try:
            module = importlib.import_module(module_part)
        except ModuleNotFoundError as exc:
            raise click.BadParameter(f"cannot import {module_part!r}: {exc}", param_hint="MODULE:SERVER") from None
    from elicitkit.server.server import Server

    obj = getattr(module, attr, None)
    if obj is None:
        raise click.BadParameter(f"{module_part} has no attribute {attr!r}", param_hint="MODULE:SERVER")
    if not isinstance(obj, Server) and inspect.isfunction(obj) and not inspect.iscoroutinefunction(obj):
        try:
            inspect.signature(obj).bind()
        except TypeError:
            pass  # it needs arguments: not a factory
        else:
            obj = obj()  # a factory
    if not isinstance(obj, Server):
        what = "a class" if isinstance(obj, type) else f"a {type(obj).__name__}"
        raise click.BadParameter(
            f"{target} is {what}, not an elicitkit Server (nor a function returning one)",
            param_hint="MODULE:SERVER",
        )
    return obj


@main.command()
@click.argument("target", metavar="MODULE:SERVER")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio", show_default=True)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8000, show_default=True)
@click.option("--path", default="/mcp", show_default=True)
@click.option(
    "--redis",
    "redis_url",
    metavar="URL",
    default=None,
    help="Join a fleet on this Redis (default $ELICITKIT_REDIS_URL): sessions work on any instance (docs/fleet.md).",
)
@click.option(
    "--auth-issuer",
    metavar="URL",
    default=None,
    help="Require OAuth bearer tokens from this authorization server (HTTP only; docs/auth.md).",
)
@click.option(
    "--auth-resource",
    metavar="URL",
    default=None,
    help="This endpoint's public URL, the tokens' audience (default http://HOST:PORT/PATH).",
)
@click.option("--auth-scope", "auth_scopes", metavar="SCOPE", multiple=True, help="A scope every request needs.")
@click.option("--auth-jwks", metavar="URL", default=None, help="The issuer's JWKS (default: from its metadata).")
@click.option(
    "--auth-introspection",
    metavar="URL",
    default=None,
    help="Check opaque tokens at this RFC 7662 endpoint (secret from $ELICITKIT_INTROSPECTION_SECRET).",
)
@click.option("--auth-client-id", metavar="ID", default=None, help="This server's client id for introspection.")
@click.option(
    "--otel",
    is_flag=True,
    help="OpenTelemetry traces, metrics and logs, configured from OTEL_* like the SDK does (docs/telemetry.md).",
)
@JSON_OPTION
def serve(
    target: str,
    transport: str,
    host: str,
    port: int,
    path: str,
    redis_url: str | None,
    auth_issuer: str | None,
    auth_resource: str | None,
    auth_scopes: tuple[str, ...],
    auth_jwks: str | None,
    auth_introspection: str | None,
    auth_client_id: str | None,
    otel: bool,
    as_json: bool,
) -> None:
    """Serve an elicitkit server object over stdio or Streamable HTTP (the address is printed once it
    listens; with --json as {"listening": URL} on stdout; stdio keeps stdout for the protocol)."""
    from elicitkit.transports.http.serve import CannotListen

    if otel:
        from elicitkit.errors import ElicitkitError
        from elicitkit.telemetry import configure_sdk

        try:
            configure_sdk()
        except ElicitkitError as exc:
            raise click.UsageError(str(exc)) from None
    server = load_server(target)
    if auth_issuer is None and (auth_resource or auth_scopes or auth_jwks or auth_introspection or auth_client_id):
        raise click.UsageError("the --auth-* options need --auth-issuer (the authorization server)")
    if auth_issuer is not None:
        if transport != "http":
            raise click.UsageError("--auth-issuer needs --transport http: stdio is not authenticated (MCP spec)")
        from elicitkit.server.auth.options import resource_server_from_options

        shown = f"[{host}]" if ":" in host else host
        try:
            server.auth = resource_server_from_options(
                issuer=auth_issuer,
                resource=auth_resource or f"http://{shown}:{port}{path}",
                scopes=auth_scopes,
                jwks_uri=auth_jwks,
                introspection=auth_introspection,
                client_id=auth_client_id,
            )
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
    if redis_url and transport == "http" and server.backplane is None:
        from elicitkit.backplane.redis_backplane import RedisBackplane

        server.use_backplane(RedisBackplane.from_url(redis_url))
    if transport == "stdio":
        server.run("stdio")
        return

    def listening(url: str) -> None:
        if as_json:
            click.echo(json.dumps({"listening": url, "server": server.name}))
        else:
            click.echo(f"{server.name}: serving MCP at {url} (Ctrl-C stops)", err=True)

    try:
        anyio.run(lambda: server.run_async("http", host=host, port=port, path=path, on_listening=listening))
    except CannotListen as exc:
        click.echo(f"error: {exc}", err=True)
        if as_json:
            click.echo(json.dumps({"error": str(exc), "exitCode": 2}))
        sys.exit(2)


@main.command()
@click.option("--ui", type=click.Choice(UI_CHOICES), default="auto", show_default=True)
@click.option(
    "--json", "as_json", is_flag=True, help="The transcript on stderr; each call and the audit as JSON on stdout."
)
def demo(ui: str, as_json: bool) -> None:
    """Walk through a server that asks: a booking form, a URL-mode deposit, a confirmed delete on 2026."""
    from elicitkit.demo.walkthrough import run

    sys.exit(run(ui, as_json=as_json))


main.add_command(auth)
main.add_command(connections)
main.add_command(gateway)

if __name__ == "__main__":  # pragma: no cover
    main()
