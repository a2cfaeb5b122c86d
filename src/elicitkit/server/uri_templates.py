"""RFC 6570 templates for resources: parsing by the ``uri-template`` library, matching here.

The library parses and expands templates but cannot run them backwards; :class:`UriMatcher`
turns its parsed expressions into one regular expression so ``resources/read`` can find which
template a URI came from and what its variables were.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote

import uri_template
from uri_template import expansions as ex

from elicitkit.errors import ElicitkitError

# Characters an unreserved (simple) expansion can never produce unencoded.
_SIMPLE = r"[^/?#&,]*"


class InvalidTemplate(ElicitkitError, ValueError):
    """The template is not valid RFC 6570."""


class UriMatcher:
    """Match concrete URIs against one template and pull out its variables."""

    def __init__(self, template: str) -> None:
        if not uri_template.validate(template):
            raise InvalidTemplate(f"not a valid RFC 6570 URI template: {template!r}")
        self.template = template
        parsed = uri_template.URITemplate(template)
        self.variables: list[str] = [var.name for var in parsed.variables]
        self._query_vars: list[str] = []
        pattern = "".join(self._part(part) for part in parsed.expansions)
        self._regex = re.compile(f"^{pattern}$")

    def _part(self, part: object) -> str:
        if isinstance(part, ex.Literal):
            return re.escape(part.value)
        names = [var.name for var in part.vars]  # type: ignore[attr-defined]
        if isinstance(part, (ex.FormStyleQueryExpansion, ex.FormStyleQueryContinuation)):
            self._query_vars.extend(names)
            lead = r"\?" if isinstance(part, ex.FormStyleQueryExpansion) else "&"
            return rf"(?:{lead}(?P<_q{len(self._query_vars)}>[^#]*))?"
        if isinstance(part, ex.ReservedExpansion):
            body, sep, lead = r"[^?#]*", ",", ""
        elif isinstance(part, ex.FragmentExpansion):
            body, sep, lead = r".*", ",", "#"
        elif isinstance(part, ex.LabelExpansion):
            body, sep, lead = r"[^/?#.]*", r"\.", r"\."
        elif isinstance(part, ex.PathExpansion):
            body, sep, lead = r"[^/?#]*", "/", "/"
        elif isinstance(part, ex.PathStyleExpansion):
            return "".join(rf"(?:;{re.escape(n)}=?(?P<{n}>[^;/?#]*))?" for n in names)
        else:
            body, sep, lead = _SIMPLE, ",", ""
        groups = sep.join(f"(?P<{n}>{body})" for n in names)
        return f"{lead}{groups}"

    def match(self, uri: str) -> dict[str, str] | None:
        """The template's variables for ``uri`` (percent-decoded), or None if it does not fit."""
        found = self._regex.match(uri)
        if found is None:
            return None
        values = {k: unquote(v) for k, v in found.groupdict().items() if v is not None and not k.startswith("_q")}
        for key, raw in found.groupdict().items():
            if key.startswith("_q") and raw:
                for name, value in parse_qsl(raw, keep_blank_values=True):
                    if name in self._query_vars:
                        values[name] = value
        return values

    def expand(self, **values: str) -> str:
        expanded = uri_template.expand(self.template, **values)
        return expanded if expanded is not None else self.template
