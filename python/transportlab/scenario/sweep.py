"""Sweeps: one run per combination of values.

    [sweep]
    "links.bottleneck.forward.rate" = ["1Mbit", "10Mbit"]   # an axis
    "flows.bulk.cc" = ["reno", "cubic"]                     # another: 2 × 2 points
    [sweep.together.ratio]                                  # one axis whose paths
    "links.leg1.forward.rate" = ["20Mbit", "30Mbit"]        # move together
    "links.leg2.forward.rate" = ["20Mbit", "10Mbit"]
    labels = ["1:1", "3:1"]                                 # optional step names

Points are the cartesian product of the axes, the first axis varying slowest. Each point
is the file without `[sweep]`, with that point's values set at their paths, validated.
"""

from __future__ import annotations

import copy
import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transportlab.scenario.errors import MISSING, FieldIssue, Issue, ScenarioError, format_value
from transportlab.scenario.fieldpath import PathError, format_path, parse_path, set_path
from transportlab.scenario.schema import Scenario, _check_sweep
from transportlab.scenario.validate import validate

_STEP_LABEL = re.compile(r"[A-Za-z0-9._:+-]{1,40}")


@dataclass(frozen=True)
class Axis:
    name: str  # short name used in labels
    keys: tuple[tuple[str, ...], ...]  # where each path sits under [sweep]
    paths: tuple[str, ...]
    steps: tuple[tuple[Any, ...], ...]  # per step, one value per path
    labels: tuple[str, ...] | None = None  # per step, a name given in the file

    def step_label(self, step: int) -> str:
        if self.labels is not None:
            return self.labels[step]
        return "/".join(_label_value(v) for v in self.steps[step])


@dataclass(frozen=True)
class Point:
    index: int
    values: dict[str, Any]  # field path → value as written
    label: str  # e.g. "rate=10Mbit,cc=cubic"; "" when there is no sweep
    scenario: Scenario
    axes: dict[str, str]  # axis name → this point's step label


def _sweep_key(keys: tuple[str, ...]) -> str:
    return format_path(("sweep",) + keys)


def axes(raw: dict, file: str = "<scenario>") -> list[Axis]:
    """The sweep's axes, with every path checked against the schema and the file."""
    sweep = raw.get("sweep") or {}
    try:
        _check_sweep(sweep)
    except FieldIssue as e:
        raise ScenarioError(file, [Issue(format_path(("sweep",) + f), p, v) for f, p, v in e.issues]) from None
    groups: list[tuple[str | None, list[tuple[tuple[str, ...], str, list]]]] = []
    labels: dict[str, tuple[str, ...]] = {}
    for key, values in sweep.items():
        if key == "together":
            for group, paths in values.items():
                paths = dict(paths)
                if LABELS in paths:
                    labels[group] = _step_labels(paths.pop(LABELS), paths, file, group)
                groups.append((group, [(("together", group, p), p, vs) for p, vs in paths.items()]))
        else:
            groups.append((None, [((key,), key, values)]))
    issues = []
    for _, members in groups:
        for keys, path, values in members:
            try:
                set_path(copy.deepcopy(raw), path, values[0], Scenario)
            except PathError as e:
                issues.append(Issue(_sweep_key(keys), f"not a field of this scenario: {e}"))
    if issues:
        raise ScenarioError(file, issues)

    single = [parse_path(path) for name, members in groups if name is None for _, path, _ in members]
    out = []
    for name, members in groups:
        if name is None:
            ((keys, path, values),) = members
            name = _short(parse_path(path), single)
        out.append(Axis(
            name=name,
            keys=tuple(k for k, _, _ in members),
            paths=tuple(p for _, p, _ in members),
            steps=tuple(zip(*(vs for _, _, vs in members))),
            labels=labels.get(name),
        ))  # fmt: skip
    return out


LABELS = "labels"  # in a together group: names of its steps, not a field path


def _step_labels(values: Any, paths: dict, file: str, group: str) -> tuple[str, ...]:
    where = _sweep_key(("together", group, LABELS))
    if not paths:
        raise ScenarioError(file, [Issue(format_path(("sweep", "together", group)), "labels name the steps of field paths; "
                                         "give at least one path", MISSING)])  # fmt: skip
    n = len(next(iter(paths.values())))
    if (
        not isinstance(values, list)
        or len(values) != n
        or len(set(values)) != n
        or not all(isinstance(v, str) and _STEP_LABEL.fullmatch(v) for v in values)
    ):
        raise ScenarioError(file, [Issue(where, f"expected {n} different names (one per step) of letters, digits, "
                                                "'.', '_', ':', '+' or '-'", values)])  # fmt: skip
    return tuple(values)


def _short(segments: list, others: list[list]) -> str:
    """The shortest tail of a path that no other swept path ends with."""
    for n in range(1, len(segments) + 1):
        tail = segments[-n:]
        if sum(1 for o in others if o[-n:] == tail) == 1:
            return format_path(tail)
    return format_path(segments)


def _label_value(v: Any) -> str:
    if isinstance(v, str):
        return v
    return format_value(v)


def expand(raw: dict, *, file: str = "<scenario>", base_dir: str | Path | None = None,
           notes: dict[tuple, str] | None = None) -> list[Point]:  # fmt: skip
    """One validated `Point` per combination of the sweep's values (one point, with no
    values and an empty label, when there is no sweep)."""
    all_axes = axes(raw, file)
    base = copy.deepcopy(raw)
    base.pop("sweep", None)
    points: list[Point] = []
    issues: list[Issue] = []
    for index, combo in enumerate(itertools.product(*(range(len(a.steps)) for a in all_axes))):
        doc = copy.deepcopy(base)
        values: dict[str, Any] = {}
        where: list[tuple[str, str]] = []  # (formatted field path, its place under [sweep])
        parts = []
        steps: dict[str, str] = {}
        for axis, step in zip(all_axes, combo):
            for keys, path, value in zip(axis.keys, axis.paths, axis.steps[step]):
                resolved = set_path(doc, path, copy.deepcopy(value), Scenario)
                values[path] = value
                where.append((format_path(resolved, doc), f"{_sweep_key(keys)}[{step}]"))
            shown = axis.step_label(step)
            steps[axis.name] = shown
            parts.append(f"{axis.name}={shown}")
        label = ",".join(parts)
        try:
            scenario = validate(doc, file, base_dir, notes)
        except ScenarioError as e:
            issues += [_relocate(i, where, label) for i in e.issues]
            continue
        points.append(Point(index, values, label, scenario, steps))
    if issues:
        unique = list({(i.path, i.problem): i for i in issues}.values())
        raise ScenarioError(file, unique)
    return points


def _relocate(issue: Issue, where: list[tuple[str, str]], label: str) -> Issue:
    """Point an issue caused by a swept value at that value under [sweep]."""
    for field, place in where:
        if issue.path == field or issue.path.startswith(field + ".") or issue.path.startswith(field + "["):
            return Issue(place + issue.path[len(field) :], issue.problem, issue.value)
    return Issue(issue.path, f"{issue.problem} (in sweep point {label})", issue.value)
