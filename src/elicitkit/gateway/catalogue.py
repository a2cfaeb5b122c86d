"""What the gateway shows its hosts: every backend's tools, prompts, resources and templates,
under each backend's namespace, and which backend (and which original name) each one is."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from elicitkit.protocol.jsonrpc import JSON
from elicitkit.server.uri_templates import InvalidTemplate, UriMatcher

__all__ = ["Catalogue", "Entry", "Listing"]

logger = logging.getLogger("elicitkit.gateway")


@dataclass(frozen=True, slots=True)
class Entry:
    """One item as the host sees it (``shown``) and where it really is (backend, original name)."""

    backend: str
    original: str
    shown: JSON

    def definition(self) -> JSON:
        return self.shown


@dataclass
class Listing:
    """One backend's lists, as it gave them."""

    tools: list[JSON] = field(default_factory=list)
    prompts: list[JSON] = field(default_factory=list)
    resources: list[JSON] = field(default_factory=list)
    templates: list[JSON] = field(default_factory=list)


class Catalogue:
    """The merged lists. Rebuilt whenever a backend's lists change; a name two backends claim
    goes to the first in the configuration, and the clash is logged naming both."""

    def __init__(self) -> None:
        self.listings: dict[str, Listing] = {}
        self.namespaces: dict[str, str] = {}
        self.order: list[str] = []
        self.tools: dict[str, Entry] = {}
        self.prompts: dict[str, Entry] = {}
        self.resources: dict[str, Entry] = {}
        self.templates: list[tuple[UriMatcher, Entry]] = []

    def set(self, backend: str, namespace: str, listing: Listing | None) -> None:
        if backend not in self.order:
            self.order.append(backend)
        self.namespaces[backend] = namespace
        if listing is None:
            self.listings.pop(backend, None)
        else:
            self.listings[backend] = listing
        self._rebuild()

    def _rebuild(self) -> None:
        tools: dict[str, Entry] = {}
        prompts: dict[str, Entry] = {}
        resources: dict[str, Entry] = {}
        templates: list[tuple[UriMatcher, Entry]] = []
        for backend in self.order:
            listing = self.listings.get(backend)
            if listing is None:
                continue
            prefix = self.namespaces.get(backend, "")
            _named(tools, backend, prefix, listing.tools, "tool")
            _named(prompts, backend, prefix, listing.prompts, "prompt")
            for item in listing.resources:
                uri = item.get("uri")
                if not isinstance(uri, str):
                    continue
                if uri in resources:
                    logger.warning(
                        "resource %s: both %s and %s have it; %s's is shown",
                        uri,
                        resources[uri].backend,
                        backend,
                        resources[uri].backend,
                    )
                    continue
                resources[uri] = Entry(backend, uri, _prefixed(item, "name", prefix))
            for item in listing.templates:
                template = item.get("uriTemplate")
                if not isinstance(template, str):
                    continue
                try:
                    matcher = UriMatcher(template)
                except InvalidTemplate as exc:
                    logger.warning(
                        "backend %s: template %s cannot be matched (%s); reads go nowhere", backend, template, exc
                    )
                    continue
                templates.append((matcher, Entry(backend, template, _prefixed(item, "name", prefix))))
        self.tools, self.prompts, self.resources, self.templates = tools, prompts, resources, templates

    def owner_of_uri(self, uri: str) -> Entry | None:
        """The backend a URI belongs to: a listed resource, else the first template matching it."""
        found = self.resources.get(uri)
        if found is not None:
            return found
        for matcher, entry in self.templates:
            if matcher.match(uri) is not None:
                return entry
        return None

    def owner_of_template(self, template: str) -> Entry | None:
        for _matcher, entry in self.templates:
            if entry.original == template:
                return entry
        return None


def _prefixed(item: JSON, key: str, prefix: str) -> JSON:
    value = item.get(key)
    if not prefix or not isinstance(value, str):
        return dict(item)
    return {**item, key: prefix + value}


def _named(into: dict[str, Entry], backend: str, prefix: str, items: list[Any], kind: str) -> None:
    for item in items:
        name = item.get("name") if isinstance(item, dict) else None
        if not isinstance(name, str):
            continue
        shown = prefix + name
        if shown in into:
            logger.warning(
                "%s %s: both %s and %s have it; %s's is shown (give one a namespace)",
                kind,
                shown,
                into[shown].backend,
                backend,
                into[shown].backend,
            )
            continue
        into[shown] = Entry(backend, name, _prefixed(item, "name", prefix))
