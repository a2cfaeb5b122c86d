"""How the terminal form looks: the question panel, each field, the review table, a URL's facts.

Only drawing lives here (rich on one console); the words and the decisions come from
:mod:`.dialogue`, so a new look does not touch the conversation and the other way round.
On a console that is not a terminal rich draws no colours and no cursor movement, so a
transcript reads like the session did.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console, Group
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from elicitkit.client.handlers.terminal.dialogue import clean, field_rules, option_marks, review_rows, who
from elicitkit.elicitation.fields import FormField
from elicitkit.elicitation.requests import Origin
from elicitkit.elicitation.urls import UrlAssessment

__all__ = ["View"]


def _norm(text: str) -> str:
    return " ".join(text.casefold().replace("_", " ").split()).strip(" .")


def _same(one: str, other: str) -> bool:
    """The same words, whatever the case, spacing or trailing full stop."""
    return _norm(one) == _norm(other)


class View:
    """Draws the form's pieces on ``console``; every server string arrives here already cleaned or is cleaned here."""

    def __init__(self, console: Console, plain: bool = False) -> None:
        self.console = console
        self.plain = plain  # lines only: no panel, no table (pipes, transcripts, screen readers)

    def header(self, origin: Origin | None, message: str, title: str | None = None, reason: str | None = None) -> None:
        """The question in a panel titled with the asker, with the server's name, version and command.

        ``reason``: why the server asks (a -32042 error's message), under the message, so it is
        read before any consent is asked for.
        """
        asker = origin or Origin()
        server = Text()
        server.append("server: ", "dim")
        server.append(clean(asker.display_name, lines=False), "bold")
        detail = []  # "Bistro (demo), bistro-demo 1.0.0": no parentheses stacked on the title's own
        if asker.title and asker.title != asker.name:
            detail.append(clean(asker.name, lines=False))
        if asker.version:
            detail.append(clean(asker.version, lines=False))
        if detail:
            server.append(", " if asker.title and asker.title != asker.name else " ")
            server.append(" ".join(detail))
        if asker.location:
            server.append(" · runs as: ", "dim")
            server.append(clean(asker.location, lines=False))
        body: list[Text] = [Text(clean(message))]
        if reason and reason.strip() != message.strip():
            body.append(Text.assemble(("why: ", "dim"), (clean(reason), "")))
        if title:
            body.insert(0, Text(clean(title, lines=False), "bold"))
        body += [Text(""), server]
        heading = Text.assemble(("Question from ", ""), (who(origin), "bold"))
        self.console.print()
        if self.plain:
            self.console.print(heading)
            for line in body:
                self.console.print(line)
            return
        self.console.print(Panel(Group(*body), title=heading, title_align="left", border_style="cyan"))

    def say(self, text: str, style: str = "") -> None:
        self.console.print(Text(text, style))

    def indented(self, text: Text) -> None:
        """Under the question, wrapped lines kept in the same column."""
        self.console.print(Padding(text, (0, 0, 0, 3), expand=False))

    def problem(self, reason: str) -> None:
        self.indented(Text(f"✗ {clean(reason, lines=False)}", "red"))

    def withdrawn(self, origin: Origin | None) -> None:
        self.console.print(Text(f"\n(the question from {who(origin)} was withdrawn)", "dim"))

    def field(self, field: FormField, index: int, count: int, current: Any) -> None:
        """A field's heading, description, rules and, for choices, the options with the current ones marked."""
        head = Text()
        head.append(f"[{index + 1}/{count}] ", "dim")
        head.append(clean(field.label, lines=False), "bold")
        if field.required:
            head.append(" (required)", "red")
        self.console.print()
        self.console.print(head)
        description = clean(field.description) if field.description else ""
        if _same(description, field.label):  # "Cpu cores" / "CPU cores": said once
            description = ""
        rules = field_rules(field)
        if description and any(_same(description, rule) or _norm(description) in _norm(rule) for rule in rules):
            description = ""  # "YYYY-MM-DD" under a rule that reads "a date (YYYY-MM-DD)"
        if description:
            self.indented(Text(description, "italic"))
        if rules:
            self.indented(Text(" · ".join(rules), "dim"))
        for start, title, chosen in option_marks(field, current):
            line = Text(start)
            line.append(title, "bold" if chosen else "")
            self.console.print(line)

    def review(self, fields: Sequence[FormField], values: dict[str, Any], problems: dict[str | None, str]) -> None:
        """The answers so far in a table, with a problem column when some do not fit."""
        if self.plain:
            self._review_lines(fields, values, problems)
            return
        table = Table(title="Your answers", title_justify="left", show_edge=False, pad_edge=False)
        table.add_column("#", justify="right", style="dim")
        table.add_column("question")
        table.add_column("answer", style="bold")
        if problems:
            table.add_column("problem", style="red")
        for row in review_rows(fields, values, problems):
            answer = Text(row.answer)
            if row.unset:
                answer.stylize("dim")
            cells: list[str | Text] = [row.number, row.question, answer]
            if problems:
                cells.append(Text(row.problem))
            table.add_row(*cells)
        self.console.print()
        if fields:
            self.console.print(table)
        else:
            self.say("There is nothing to fill in; send to agree.")
        if None in problems:
            self.problem(problems[None])

    def _review_lines(
        self, fields: Sequence[FormField], values: dict[str, Any], problems: dict[str | None, str]
    ) -> None:
        self.console.print()
        self.console.print(Text("Your answers:" if fields else "There is nothing to fill in; send to agree."))
        for row in review_rows(fields, values, problems):
            line = Text(f"  {row.number}. {row.question}: {row.answer}")
            if row.problem:
                line.append(f"  ✗ {row.problem}", "red")
            self.console.print(line)
        if None in problems:
            self.problem(problems[None])

    def url(self, facts: UrlAssessment) -> None:
        """The full URL on one copyable line with its host set apart, the domain, and every warning."""
        before, host, after = facts.parts
        line = Text("   ")
        line.append(clean(before, lines=False), "dim")
        line.append(clean(host, lines=False), "bold underline")
        line.append(clean(after, lines=False), "dim")
        self.console.print(Text("This question is answered on a web page:"))
        self.console.print(line, soft_wrap=True)  # one unbroken line: copyable
        domain = Text("   domain: ")
        domain.append(clean(facts.host or "(none)", lines=False), "bold")  # its real name first, always
        self.console.print(domain)
        if facts.lookalike:
            stop = Text("   ⚠ STOP: ", "bold red")
            stop.append(f"this domain is written to look like {clean(facts.display_host, lines=False)}")
            letters = facts.foreign_words()
            stop.append(f"; {clean(letters, lines=False)}." if letters else ".")
            self.console.print(stop)
        for warning in facts.warnings:
            self.indented(Text("⚠ " + clean(warning, lines=False), "bold yellow"))

    def address(self, url: str) -> None:
        """A URL to open by hand, on one unbroken line."""
        self.console.print(Text("   " + clean(url, lines=False)), soft_wrap=True)
