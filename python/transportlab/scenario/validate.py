"""Validate a raw scenario document (a dict from TOML) into a `Scenario`, turning
pydantic's errors into one-line `Issue`s with the scenario's own field paths."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from transportlab.scenario.errors import MISSING, FieldIssue, Issue, ScenarioError
from transportlab.scenario.fieldpath import format_path, keys_of, lookup
from transportlab.scenario.schema import Scenario


def validate(raw: dict, file: str = "<scenario>", base_dir: str | Path | None = None,
             notes: dict[tuple, str] | None = None) -> Scenario:  # fmt: skip
    """`notes` maps resolved paths (tuples) to a remark appended to issues at that path,
    e.g. "(set by --set)"."""
    try:
        return Scenario.model_validate(raw, context={"base_dir": base_dir})
    except ValidationError as e:
        raise ScenarioError(file, issues_from(e, raw, notes)) from None


def issues_from(err: ValidationError, raw: Any, notes: dict[tuple, str] | None = None) -> list[Issue]:
    out: list[Issue] = []
    for e in err.errors(include_url=False):
        loc = tuple(seg for seg in e["loc"] if not (isinstance(seg, str) and (seg.startswith("~") or seg == "[key]")))
        ctx = e.get("ctx") or {}
        cause = ctx.get("error")
        if isinstance(cause, FieldIssue):
            for field, problem, value in cause.issues:
                full = loc + tuple(field)
                if value is MISSING:
                    value = lookup(raw, full)
                out.append(_issue(full, problem, value, raw, notes))
            continue
        problem, value = _describe(e, loc), e.get("input", MISSING)
        if e["type"] == "missing":
            value = MISSING
        out.append(_issue(loc, problem, value, raw, notes))
    # pydantic may report one place twice (e.g. both union branches); keep the first.
    seen, unique = set(), []
    for issue in out:
        if (issue.path, issue.problem) not in seen:
            seen.add((issue.path, issue.problem))
            unique.append(issue)
    return unique


def _issue(loc: tuple, problem: str, value: Any, raw: Any, notes: dict[tuple, str] | None) -> Issue:
    # The most specific note: a --set inside a link that came from a base file names the --set.
    notes = notes or {}
    path = max((p for p in notes if loc[: len(p)] == p), key=len, default=None)
    if path is not None:
        problem = f"{problem} {notes[path]}"
    return Issue(format_path(loc, raw), problem, value)


_SIMPLE = {
    "missing": "missing required field",
    "int_type": "expected an integer",
    "float_type": "expected a number",
    "string_type": "expected a string",
    "bool_type": "expected true or false",
    "list_type": "expected an array",
    "dict_type": "expected a table",
    "model_type": "expected a table",
    "model_attributes_type": "expected a table",
    "union_tag_invalid": "expected a value of another kind",
}

# Error types whose message quotes one value of the error's context: type → (text, key).
_WITH_CONTEXT = {
    "literal_error": ("expected one of {}", "expected"),
    "greater_than_equal": ("expected a number ≥ {}", "ge"),
    "greater_than": ("expected a number > {}", "gt"),
    "less_than_equal": ("expected a number ≤ {}", "le"),
    "less_than": ("expected a number < {}", "lt"),
    "too_short": ("expected at least {} item(s)", "min_length"),
    "too_long": ("expected at most {} item(s)", "max_length"),
}


def _describe(e: ErrorDetails, loc: tuple) -> str:
    t, ctx = e["type"], e.get("ctx") or {}
    if t == "extra_forbidden":
        keys = keys_of(Scenario, list(loc[:-1]))
        return "unknown key" + (f" (expected one of: {', '.join(keys)})" if keys else "")
    if t in _SIMPLE:
        return _SIMPLE[t]
    if t in _WITH_CONTEXT:
        text, key = _WITH_CONTEXT[t]
        return text.format(ctx.get(key))
    msg = e.get("msg", "invalid value")
    for prefix in ("Value error, ", "Assertion failed, "):
        if msg.startswith(prefix):
            msg = msg[len(prefix) :]
    return msg[:1].lower() + msg[1:]
