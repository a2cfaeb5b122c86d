"""ECMA-262 ``pattern`` on RE2: what is rewritten, what is refused, and that nothing backtracks."""

from __future__ import annotations

import re
from typing import Any

import pytest

from elicitkit.elicitation.patterns import UnsupportedPattern, compile_pattern, pattern_problem, search, to_re2


@pytest.mark.parametrize(
    ("pattern", "text", "found"),
    [
        ("^[A-Z]{3}$", "ABC", True),
        ("^[A-Z]{3}$", "ABCD", False),
        ("b", "abc", True),  # JSON Schema patterns are not anchored
        ("\\u0041", "A", True),
        ("\\u{1F600}", "\U0001f600", True),
        ("\\cJ", "\n", True),
        ("\\0", "\0", True),
        ("a.b", "a\nb", False),  # ECMA's dot stops at every line terminator...
        ("a.b", "a\rb", False),
        ("a.b", "a\u2028b", False),
        ("a.b", "a-b", True),
        ("\\s", "\u00a0", True),  # ...and its \s has the Unicode spaces and \v
        ("\\s", "\v", True),
        ("[\\s,]", "\u3000", True),
        ("\\S", "\u00a0", False),
        ("[^\\s]", " ", False),
        ("[]", "a", False),  # ECMA: matches nothing
        ("[^]", "\n", True),  # ECMA: matches anything
        ("[\\b]", "\b", True),
        ("\\d", "\u0663", False),  # ASCII digits only, as in ECMA (Python's re says yes)
        ("\\w", "\u00e9", False),
        ("^a$", "a\n", False),  # $ is the very end, as in ECMA (Python's re says yes)
        ("\\/", "/", True),
        ("(?<year>\\d{4})", "2024", True),
    ],
)
def test_ecma_meaning(pattern: str, text: str, found: bool) -> None:
    assert search(pattern, text) is found


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("(?=a)a", "lookahead"),
        ("(?!a)", "lookahead"),
        ("(?<=a)b", "lookbehind"),
        ("(?<!a)b", "lookbehind"),
        ("(a)\\1", "backreference"),
        ("(?<n>a)\\k<n>", "backreference"),
        ("a{1001}", "repetition"),
        ("(", "missing"),
        ("\\", "lone backslash"),
        ("\\u12", "\\uXXXX"),
        ("\\u{110000}", "U+10FFFF"),
        ("[\\S]", "\\S inside"),
        ("x" * 5000, "longer than"),
        ("\ud800", "surrogate"),
    ],
)
def test_patterns_re2_cannot_run_are_refused_with_a_reason(pattern: str, reason: str) -> None:
    with pytest.raises(UnsupportedPattern, match=re.escape(reason)):
        compile_pattern(pattern)
    problem = pattern_problem(pattern)
    assert problem is not None and "cannot be evaluated safely" in problem


@pytest.mark.parametrize("pattern", [5, None, ["a"]])
def test_non_string_patterns_are_refused(pattern: Any) -> None:
    assert pattern_problem(pattern) is not None


def test_translation_leaves_plain_patterns_alone() -> None:
    assert to_re2("^[a-z0-9_-]{3,16}$") == "^[a-z0-9_-]{3,16}$"


@pytest.mark.timeout(5)
def test_defect_03_catastrophic_patterns_run_in_linear_time() -> None:
    for pattern in ("^(a+)+$", "^(a|a)*$", "^(a|aa)+$", "(x+x+)+y"):
        assert search(pattern, "a" * 1_000_000 + "!") is False


def test_lone_surrogates_in_the_text_do_not_crash() -> None:
    assert search("a", "\ud800a") is True
