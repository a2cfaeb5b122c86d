"""``pattern`` evaluated in linear time: ECMA-262 regular expressions run on RE2.

A server chooses the pattern and a person (or a hostile peer) chooses the text, so a
backtracking engine lets either side freeze the other: ``^(a+)+$`` against ``"a" * 24 + "!"``
took 1.6 s of CPU in Python's ``re``, four times more for every two characters. RE2 (the
``google-re2`` package) matches in time linear in the text, whatever the pattern.

JSON Schema says a ``pattern`` is an ECMA-262 regular expression. Before handing one to RE2,
:func:`compile_pattern` rewrites the ECMA-only spellings RE2 lacks and refuses what RE2 cannot
do, so a pattern either means what ECMA-262 says or is refused with a reason:

==============================  =====================================================
ECMA-262                         here
==============================  =====================================================
``\\uXXXX``, ``\\u{X...}``        rewritten to ``\\x{...}``
``\\cX`` (control letter)         rewritten to the control character
``\\0`` (NUL)                     rewritten to ``\\x00``
``\\s`` / ``\\S``                 rewritten to ECMA's whitespace set (RE2's lacks ``\\v``
                                 and the Unicode spaces); ``\\S`` inside ``[...]`` is refused
``.``                             rewritten to "anything but ``\\n``, ``\\r``, U+2028, U+2029"
``[]`` / ``[^]``                  rewritten to "nothing" / "anything"
``[\\b]`` (backspace)              rewritten to ``\\x08``
``\\/``                           rewritten to ``/``
lookahead ``(?=`` ``(?!``,        refused (RE2 cannot, by design: they need backtracking)
lookbehind ``(?<=`` ``(?<!``
backreferences ``\\1``, ``\\k<n>``  refused (same reason)
anything RE2 fails to compile     refused with RE2's reason (e.g. ``{1001}``: RE2 caps
                                 counted repetition at 1000; a program over the memory cap)
==============================  =====================================================

``\\d``, ``\\w``, ``\\b``, ``^`` and ``$`` (no multiline flag) already mean in RE2 what they
mean in ECMA-262 (ASCII classes; ``$`` only at the very end), unlike Python's ``re``.
Where a pattern is refused: the server's gate refuses ``pattern`` outright (the spec's subset
has none); a client's lenient gate refuses the question (-32602, naming the field and the
reason); :func:`~elicitkit.elicitation.answers.validate_answer` called directly with such a
schema reports an :class:`~elicitkit.elicitation.errors.InvalidAnswer` naming the field.
"""

from __future__ import annotations

import functools
from typing import Any

import re2

MAX_PATTERN_CHARS = 4096  # longer patterns are refused: no form needs them, and compiling costs
_MAX_MEM = 1 << 20  # RE2 program memory per pattern: ample for form patterns, bounds the DFA too

# ECMA-262 WhiteSpace and LineTerminator code points (what \s matches there).
_ECMA_SPACE = r"\t\n\x{0B}\f\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}"
_ECMA_DOT = r"[^\n\r\x{2028}\x{2029}]"


class UnsupportedPattern(ValueError):
    """A pattern that cannot be evaluated in linear time (or is not a valid pattern at all)."""


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused pattern to stderr
    options.max_mem = _MAX_MEM
    options.never_capture = True  # only "does it match?" is asked: no submatch bookkeeping
    return options


_OPTIONS = _options()
_UNANCHORED = getattr(re2, "_Anchor", None)
_NO_MATCH = getattr(re2, "_NULL_SPAN", None)


def found_in(program: Any, text: str) -> bool:
    """True when the compiled ``program`` matches somewhere in ``text``.

    Calls RE2's matcher directly on the UTF-8 bytes: the wrapper's ``search`` builds a match
    object and maps every offset back to characters, ten times the cost of the match itself.
    """
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (Python strings may hold one; JSON text cannot)
        data = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace").encode("utf-8")
    regexp = getattr(program, "_regexp", None)
    if regexp is None or _UNANCHORED is None:  # another google-re2 layout: the public API
        return program.search(data.decode("utf-8")) is not None
    return bool(regexp.Match(_UNANCHORED.UNANCHORED, data, 0, len(data))[0] != _NO_MATCH)


def to_re2(pattern: str) -> str:
    """The RE2 spelling of an ECMA-262 ``pattern``; :class:`UnsupportedPattern` when there is none."""
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 >= n:
                raise UnsupportedPattern("the pattern ends with a lone backslash")
            d = pattern[i + 1]
            i += 2
            if d == "u":
                code, i = _unicode_escape(pattern, i)
                out.append(f"\\x{{{code}}}")
            elif d == "c" and i < n and pattern[i].isascii() and pattern[i].isalpha():
                out.append(f"\\x{{{ord(pattern[i]) % 32:02X}}}")
                i += 1
            elif d == "0" and not (i < n and pattern[i].isdigit()):
                out.append("\\x00")
            elif d.isdigit() and d != "0" and not in_class:
                raise UnsupportedPattern(f"backreference \\{d} needs a backtracking engine")
            elif d == "k" and i < n and pattern[i] == "<":
                raise UnsupportedPattern("named backreference \\k<...> needs a backtracking engine")
            elif d == "s":
                out.append(_ECMA_SPACE if in_class else f"[{_ECMA_SPACE}]")
            elif d == "S":
                if in_class:
                    raise UnsupportedPattern("\\S inside a character class is not supported")
                out.append(f"[^{_ECMA_SPACE}]")
            elif d == "b" and in_class:
                out.append("\\x08")
            elif d == "/":
                out.append("/")
            else:
                out.append("\\" + d)
            continue
        if in_class:
            if c == "]":
                in_class = False
            out.append(c)
            i += 1
            continue
        if c == "[":
            rest = pattern[i + 1 : i + 3]
            if rest.startswith("]"):
                out.append(r"[^\x00-\x{10FFFF}]")  # ECMA's [] matches nothing
                i += 2
                continue
            if rest == "^]":
                out.append(r"[\x00-\x{10FFFF}]")  # ECMA's [^] matches anything
                i += 3
                continue
            in_class = True
            out.append(c)
            i += 1
            if pattern[i : i + 1] == "^":
                out.append("^")
                i += 1
            continue
        if c == "(" and pattern[i + 1 : i + 2] == "?":
            head = pattern[i + 2 : i + 4]
            if head[:1] in ("=", "!") or head in ("<=", "<!"):
                raise UnsupportedPattern("lookahead and lookbehind need a backtracking engine")
        out.append(_ECMA_DOT if c == "." else c)
        i += 1
    return "".join(out)


def _unicode_escape(pattern: str, i: int) -> tuple[str, int]:
    """The hex digits of a ``\\u`` escape whose body starts at ``i``, and the index after it."""
    if pattern[i : i + 1] == "{":
        end = pattern.find("}", i)
        digits = pattern[i + 1 : end] if end > 0 else ""
        if not digits or len(digits) > 6 or not all(ch in "0123456789abcdefABCDEF" for ch in digits):
            raise UnsupportedPattern("malformed \\u{...} escape")
        if int(digits, 16) > 0x10FFFF:
            raise UnsupportedPattern("\\u{...} escape beyond U+10FFFF")
        return digits, end + 1
    digits = pattern[i : i + 4]
    if len(digits) != 4 or not all(ch in "0123456789abcdefABCDEF" for ch in digits):
        raise UnsupportedPattern("malformed \\uXXXX escape")
    return digits, i + 4


@functools.lru_cache(maxsize=512)
def compile_pattern(pattern: str) -> Any:
    """A compiled RE2 program for the ECMA-262 ``pattern`` (cached); :class:`UnsupportedPattern` if none."""
    if not isinstance(pattern, str):
        raise UnsupportedPattern("pattern must be a string")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise UnsupportedPattern(f"pattern is longer than {MAX_PATTERN_CHARS} characters")
    translated = to_re2(pattern)
    try:
        return re2.compile(translated, _OPTIONS)
    except UnicodeEncodeError:
        raise UnsupportedPattern("pattern holds a lone surrogate") from None
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise UnsupportedPattern(f"not a pattern RE2 can run: {reason}") from None


def pattern_problem(pattern: Any) -> str | None:
    """Why ``pattern`` cannot be used (None when it can): for the schema gate."""
    try:
        compile_pattern(pattern)
    except UnsupportedPattern as exc:
        return f"pattern {pattern!r:.80} cannot be evaluated safely: {exc}"
    except TypeError:  # unhashable: not a string
        return "pattern must be a string"
    return None


def search(pattern: str, text: str) -> bool:
    """True when ``pattern`` matches somewhere in ``text`` (JSON Schema's unanchored rule)."""
    return found_in(compile_pattern(pattern), text)
