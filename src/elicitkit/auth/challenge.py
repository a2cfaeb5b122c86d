"""``WWW-Authenticate`` challenges (RFC 9110 section 11.6.1), read leniently and without I/O.

A header may carry several challenges (``DPoP algs="ES256", Bearer realm="x", scope="a b"``)
and a response several headers. :func:`parse_challenges` never raises: what does not parse is
skipped, so a hostile or broken server costs us its hints, not the connection. Parameter names
are case-insensitive (lowercased here); values keep their case.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

__all__ = ["Challenge", "challenges_from", "parse_challenges"]

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_MAX_HEADER = 16_384  # longer headers are cut: a hint is never worth unbounded parsing


@dataclass(frozen=True)
class Challenge:
    """One challenge: its scheme (lowercased) and its parameters (names lowercased)."""

    scheme: str
    params: Mapping[str, str] = field(default_factory=dict)

    def get(self, name: str) -> str | None:
        return self.params.get(name)

    @property
    def scopes(self) -> list[str] | None:
        """The ``scope`` parameter as a list, or None when absent or empty."""
        raw = self.params.get("scope")
        if raw is None:
            return None
        scopes = raw.split()
        return scopes or None


def _skip_ws(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t":
        i += 1
    return i


def _quoted(text: str, i: int) -> tuple[str, int] | None:
    """A quoted-string starting at ``text[i] == '"'``: its value and the index after it."""
    out: list[str] = []
    i += 1
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            out.append(text[i + 1])
            i += 2
            continue
        if ch == '"':
            return "".join(out), i + 1
        out.append(ch)
        i += 1
    return None


def _starts_param(text: str, i: int) -> bool:
    """Whether ``text[i:]`` begins ``name = value`` (an auth-param), not a token68 or a new scheme."""
    m = _TOKEN.match(text, i)
    if m is None:
        return False
    j = _skip_ws(text, m.end())
    if j >= len(text) or text[j] != "=":
        return False
    k = _skip_ws(text, j + 1)
    return k < len(text) and text[k] not in "=,"


def parse_challenges(header: str) -> list[Challenge]:
    """Every challenge in one ``WWW-Authenticate`` value; malformed parts are skipped."""
    text = header[:_MAX_HEADER]
    challenges: list[Challenge] = []
    i = 0
    while i < len(text):
        i = _skip_ws(text, i)
        while i < len(text) and text[i] in ", \t":
            i += 1
        m = _TOKEN.match(text, i)
        if m is None:
            # Not a scheme here: skip to the next comma and try again.
            nxt = text.find(",", i + 1)
            if nxt < 0:
                break
            i = nxt
            continue
        scheme = m.group().lower()
        i = _skip_ws(text, m.end())
        params: dict[str, str] = {}
        if not _starts_param(text, i):
            # token68 form (``Basic abc==``), or a bare scheme: no parameters to read.
            t68 = _TOKEN68.match(text, i)
            challenges.append(Challenge(scheme, {}))
            i = t68.end() if t68 is not None else i
            continue
        while i < len(text):
            i = _skip_ws(text, i)
            name_m = _TOKEN.match(text, i)
            if name_m is None:
                break
            j = _skip_ws(text, name_m.end())
            if j >= len(text) or text[j] != "=":
                break  # the next challenge's scheme: leave it for the outer loop
            j = _skip_ws(text, j + 1)
            if j < len(text) and text[j] == '"':
                quoted = _quoted(text, j)
                if quoted is None:
                    i = len(text)
                    break
                value, j = quoted
            else:
                value_m = _TOKEN68.match(text, j) or _TOKEN.match(text, j)
                if value_m is None:
                    value, j = "", j
                else:
                    value, j = value_m.group(), value_m.end()
            params.setdefault(name_m.group().lower(), value)
            j = _skip_ws(text, j)
            if j < len(text) and text[j] == ",":
                j += 1
            elif j < len(text):
                i = j
                break
            i = j
        challenges.append(Challenge(scheme, params))
    return challenges


def challenges_from(headers: Mapping[str, str]) -> list[Challenge]:
    """The challenges of every ``WWW-Authenticate`` header of a response (multi-dicts included)."""
    getall = getattr(headers, "getall", None)
    values: Iterable[str]
    if getall is not None:
        values = getall("WWW-Authenticate", [])
    else:
        values = [v for k, v in headers.items() if k.lower() == "www-authenticate"]
    found: list[Challenge] = []
    for value in values:
        found.extend(parse_challenges(value))
    return found
