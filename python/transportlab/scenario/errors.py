"""Scenario errors: one line each, `<file>: <field.path>: <problem> (got <value>)`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

MISSING: Any = object()  # "no offending value to show" (e.g. a missing field)

_MAX_VALUE_CHARS = 80
_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def format_value(value: Any) -> str:
    """A value as the user wrote it (TOML-like), shortened to one short line."""
    text = _toml(value)
    if len(text) > _MAX_VALUE_CHARS:
        text = text[: _MAX_VALUE_CHARS - 1] + "…"
    return text


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        items = ", ".join(f"{k if _BARE_KEY.match(str(k)) else repr(str(k))} = {_toml(v)}" for k, v in value.items())
        return "{" + items + "}"
    return str(value)


@dataclass(frozen=True)
class Issue:
    """One problem: where (a field path, "" for the file itself), what, and the value."""

    path: str
    problem: str
    value: Any = MISSING

    def line(self, file: str) -> str:
        where = f"{file}: {self.path}: " if self.path else f"{file}: "
        got = "" if self.value is MISSING else f" (got {format_value(self.value)})"
        return f"{where}{self.problem}{got}"


class FieldIssue(ValueError):
    """Raised inside schema validators to point at fields below the model being
    validated. `issues` holds (sub-path, problem, value) triples; the sub-path is a tuple
    of keys and list indices relative to that model, and a MISSING value is looked up in
    the input."""

    def __init__(self, problem: str, field: tuple = (), value: Any = MISSING, *, more: list | None = None):
        self.issues: list[tuple[tuple, str, Any]] = [(tuple(field), problem, value)] + list(more or [])
        super().__init__(problem)


def refuse_given(given: set[str], keys: tuple[str, ...], why: str) -> None:
    """A flow field that does not apply to this kind of flow is an error: the first of
    `keys` that is `given`, as `<why>; <key> does not apply`."""
    for k in keys:
        if k in given:
            raise FieldIssue(f"{why}; {k} does not apply", (k,))


class ScenarioError(Exception):
    """An invalid scenario. `str(e)` is the first problem on one line; `issues` has all."""

    def __init__(self, file: str, issues: list[Issue]):
        if not issues:
            raise ValueError("ScenarioError needs at least one issue")
        self.file = str(file)
        self.issues = list(issues)
        super().__init__(self.issues[0].line(self.file))

    def __str__(self) -> str:
        return self.issues[0].line(self.file)

    def lines(self) -> list[str]:
        return [i.line(self.file) for i in self.issues]


def format_error(e: BaseException, max_lines: int = 20) -> str:
    """What `tlab run/validate` print (then exit 2): every problem, one line each."""
    if isinstance(e, ScenarioError):
        lines = e.lines()
        if len(lines) > max_lines:
            lines = lines[:max_lines] + [f"{e.file}: … and {len(lines) - max_lines} more problem(s)"]
        return "\n".join(lines)
    return f"error: {e}"
