"""What a person should know about a URL before a handler opens it for them.

The spec asks clients to show the full URL with its domain plain to see, to warn about
look-alike hosts, and to get consent before navigating. :func:`assess_url` gathers the facts
once (scheme, host as written and as decoded, loopback or not) and the warnings worth
showing; the terminal and browser handlers only render them.
"""

from __future__ import annotations

import ipaddress
import unicodedata
from dataclasses import dataclass
from urllib.parse import urlsplit

_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})


@dataclass(frozen=True, slots=True)
class UrlAssessment:
    url: str
    scheme: str
    host: str  # as the URL spells it (punycode stays punycode)
    display_host: str  # decoded for reading; equals host for plain ASCII names
    port: int | None
    loopback: bool
    warnings: tuple[str, ...]

    @property
    def secure(self) -> bool:
        return self.scheme == "https"

    @property
    def lookalike(self) -> bool:
        """The domain is not plain ASCII letters as read: it may imitate a familiar site, so stop before opening."""
        return self.display_host != self.host or not self.host.isascii() or bool(self.foreign_letters)

    @property
    def ascii_host(self) -> str:
        """The host in plain ASCII letters (punycode for an internationalised name): what any keyboard can type."""
        return _ascii_host(self.host)

    @property
    def foreign_letters(self) -> tuple[tuple[int, str, str], ...]:
        """Each non-ASCII letter of the domain as read: (1-based position, the letter, its Unicode name)."""
        return tuple(
            (i, ch, unicodedata.name(ch, "unnamed character"))
            for i, ch in enumerate(self.display_host, 1)
            if not ch.isascii()
        )

    def foreign_words(self) -> str:
        """The foreign letters in a sentence, e.g. "letter 1, “\\u0430”, is CYRILLIC SMALL LETTER A"."""
        named = [f"letter {i}, \u201c{ch}\u201d, is {name}" for i, ch, name in self.foreign_letters]
        if not named:
            return ""
        if len(named) > 4:
            named = [*named[:4], f"and {len(named) - 4} more"]
        return "; ".join(named) + " (not a plain Latin letter)"

    @property
    def parts(self) -> tuple[str, str, str]:
        """The URL split as (before the host, the host[:port], after it), to set the host apart."""
        start = self.url.lower().find(self.host.lower()) if self.host else -1
        if start < 0:
            return self.url, "", ""
        end = start + len(self.host)
        if self.port is not None and self.url[end : end + 1] == ":":
            end += 1 + len(str(self.port))
        return self.url[:start], self.url[start:end], self.url[end:]


def _ascii_host(host: str) -> str:
    labels = []
    for label in host.split("."):
        if label.isascii():
            labels.append(label)
            continue
        try:
            labels.append(label.encode("idna").decode("ascii"))
        except UnicodeError:  # not a valid IDNA label: its raw punycode, still plain ASCII
            labels.append("xn--" + label.lower().encode("punycode").decode("ascii"))
    return ".".join(labels)


def _decode_host(host: str) -> str:
    labels = []
    for label in host.split("."):
        if label.lower().startswith("xn--"):
            try:
                labels.append(label.encode("ascii").decode("idna"))
            except UnicodeError:
                labels.append(label)
        else:
            labels.append(label)
    return ".".join(labels)


def _is_loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _mixed_scripts(text: str) -> bool:
    scripts = set()
    for ch in text:
        if ch.isalpha():
            name = unicodedata.name(ch, "")
            scripts.add(name.split(" ")[0] if name else "?")
    return len(scripts) > 1


def assess_url(url: str) -> UrlAssessment:
    """Facts and warnings about ``url``; never raises for a string."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        port = parts.port
    except ValueError:
        port = None
    display = _decode_host(host)
    loopback = _is_loopback(host)
    warnings: list[str] = []
    if parts.scheme not in ("http", "https"):
        warnings.append(f"this is not a web address (scheme {parts.scheme or 'missing'!r})")
    elif parts.scheme != "https" and not loopback:
        warnings.append("this page is not encrypted (http, not https): anything you enter can be read in transit")
    if any(label.lower().startswith("xn--") for label in host.split(".")):
        warnings.append(
            f"the domain is internationalised: {host} is shown to you as {display};"
            " look-alike letters can impersonate a familiar site"
        )
    elif not host.isascii():
        warnings.append(f"the domain {host} contains non-ASCII letters that can imitate a familiar site")
    if _mixed_scripts(display.replace(".", "")):
        warnings.append("the domain mixes letters from different alphabets")
    if parts.username or parts.password:
        warnings.append("the URL carries a user name before the host; the real site is the part after '@'")
    if any(unicodedata.category(ch) in ("Cc", "Cf") for ch in url):
        warnings.append("the URL contains invisible or direction-changing characters that can disguise it")
    return UrlAssessment(url, parts.scheme, host, display, port, loopback, tuple(warnings))
