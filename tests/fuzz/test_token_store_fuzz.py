"""The token file and the loopback callback against hostile input.

* :class:`FileTokenStore` reading any bytes at all: it returns entries that are JSON objects or
  nothing, raises nothing, and never destroys what it found (a file it cannot use is kept aside
  byte for byte); a save afterwards works and keeps earlier good entries.
* :class:`LoopbackAuthorizer`'s callback with any query string: the answer is a page (never a
  server error), and the authorization settles only with a ``code`` or an ``error``, returning
  exactly the parameters sent (or an ``invalid_request`` when one is repeated).
"""

from __future__ import annotations

import io
import json
import tempfile
from pathlib import Path
from urllib.parse import urlencode

import anyio
import httpx
from hypothesis import event, given
from hypothesis import strategies as st

from elicitkit.auth import FileTokenStore, LoopbackAuthorizer

from ._budget import fuzz_settings
from ._strategies import json_values

KEY = "tokens " + json.dumps(["https://mcp.example.com/mcp", "https://as.example.com"])

file_contents = st.one_of(
    st.binary(max_size=300),
    json_values.map(lambda value: json.dumps(value).encode()),
    st.dictionaries(st.text(max_size=20), json_values, max_size=4).map(lambda value: json.dumps(value).encode()),
)


@fuzz_settings(150)
@given(content=file_contents)
def test_any_token_file_reads_safely_and_loses_nothing(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "tokens.json"
        path.write_bytes(content)
        path.chmod(0o600)
        store = FileTokenStore(path)

        async def use() -> None:
            for key in await store.keys():
                value = await store.load(key)
                assert value is None or isinstance(value, dict)
            await store.save(KEY, {"access_token": "a"})
            assert await store.load(KEY) == {"access_token": "a"}

        anyio.run(use)
        aside = Path(scratch) / "tokens.json.corrupt-1"
        try:
            parsed = json.loads(content)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            event("an object: read in place")
            assert not aside.exists()
            kept = json.loads(path.read_text())
            assert {k: v for k, v in kept.items() if k != KEY} == {k: v for k, v in parsed.items() if k != KEY}
        else:
            event("not an object: kept aside")
            assert aside.read_bytes() == content


query_keys = st.sampled_from(["code", "state", "iss", "error", "error_description", "x", "", "code "])
query_values = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
queries = st.lists(st.tuples(query_keys, query_values), max_size=6)


@fuzz_settings(40)
@given(pairs=queries)
def test_any_callback_query_gets_a_page_and_settles_only_on_a_code_or_an_error(pairs: list[tuple[str, str]]) -> None:
    async def scenario() -> None:
        settled: dict[str, str] = {}
        authorizer = LoopbackAuthorizer(open_browser=False, print_to=io.StringIO(), timeout=5)
        await authorizer.start()
        try:
            async with anyio.create_task_group() as tg:

                async def wait() -> None:
                    settled.update(await authorizer.authorize("https://as.example/authorize"))

                tg.start_soon(wait)
                await anyio.sleep(0.01)
                async with httpx.AsyncClient(trust_env=False, timeout=5) as http:
                    page = await http.get(authorizer.redirect_uri + "?" + urlencode(pairs))
                assert page.status_code in (200, 400), page.text
                names = [name for name, _ in pairs]
                final = "code" in names or "error" in names
                if not final:
                    assert page.status_code == 400
                    tg.cancel_scope.cancel()
        finally:
            await authorizer.close()
        if not final:
            event("no code or error: not settled")
            assert settled == {}
        elif len(set(names)) != len(names):
            event("a repeated parameter: invalid_request")
            assert settled["error"] == "invalid_request"
        else:
            event("settled with what was sent")
            assert settled == dict(pairs)

    anyio.run(scenario)
