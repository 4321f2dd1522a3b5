"""`include`: a scenario file built on a base file.

    include = "base.toml"          # relative to this file's folder
    name = "s1-loss"               # keys here override the base's
    [set]                          # values inside the base's lists, by field path
    "links.radio.forward.split" = { mode = "duplicate" }

The base is read first (it may include another); the including file's keys override it:
a table merges key by key, any other value (a string, a number, an array, an array of
tables such as `[[links]]`) replaces the base's whole. `[set]` then changes single
values by field path, as `--set` does, so one link, flow or leg of the base can be
changed without writing it all again. Problems name the file they are in, and the file
that included it. A relative file path a base gives (a link's `trace`) is relative to the
base's folder, wherever the including file is.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from transportlab.scenario.errors import Issue, ScenarioError, format_value
from transportlab.scenario.fieldpath import PathError, format_path, set_path
from transportlab.scenario.schema import Scenario

INCLUDE = "include"
SET = "set"
# The scenario fields that name a file, relative to the folder of the file that gives them
# (the schema's PathSpec.trace).
FILE_FIELDS = frozenset({"trace"})


def resolve_includes(raw: dict, file: str | os.PathLike, read: Callable[[str], dict]) -> tuple[dict, dict[tuple, str]]:
    """`raw` (the document of `file`) with its base merged in and its `[set]` applied,
    `include` and `set` removed; and notes marking the paths whose values came from a
    base file (so a problem there names it). `read(path)` reads one TOML file."""
    return _resolve(raw, str(file), read, (str(file),))


def _resolve(
    raw: dict, file: str, read: Callable[[str], dict], chain: tuple[str, ...]
) -> tuple[dict, dict[tuple, str]]:
    raw = dict(raw)
    include, changes = raw.pop(INCLUDE, None), raw.pop(SET, None)
    if include is None:
        if changes is not None:
            raise ScenarioError(file, [Issue(SET, "set changes values of an included file; it goes with include")])
        return raw, {}
    if not isinstance(include, str) or not include:
        raise ScenarioError(file, [Issue(INCLUDE, 'expected the base file\'s name, e.g. "base.toml"', include)])
    if changes is not None and not isinstance(changes, dict):
        raise ScenarioError(file, [Issue(SET, 'expected a table of "field.path" = value', changes)])
    base_file = str(Path(file).parent / include)
    if any(os.path.realpath(base_file) == os.path.realpath(f) for f in chain):
        cycle = " → ".join(chain + (base_file,))
        raise ScenarioError(file, [Issue(INCLUDE, f"the files include each other ({cycle})", include)])
    try:
        base_raw = read(base_file)
    except ScenarioError as e:
        if not Path(base_file).is_file():
            raise ScenarioError(file, [Issue(INCLUDE, f"cannot read the base file {base_file}", include)]) from None
        raise ScenarioError(e.file, [_included_by(i, file) for i in e.issues]) from None
    try:
        base, base_notes = _resolve(base_raw, base_file, read, chain + (base_file,))
    except ScenarioError as e:
        raise ScenarioError(e.file, [_included_by(i, file) for i in e.issues]) from None
    merged, from_base = _merge(_anchored(base, Path(base_file).parent), raw, ())
    notes = {path: f"(from {base_file})" for path in from_base}
    # A value a base took from its own base names that file (the longer path wins).
    notes.update({p: n for p, n in base_notes.items() if any(p[: len(b)] == b for b in from_base)})
    for text, value in (changes or {}).items():
        try:
            resolved = tuple(set_path(merged, text, value, Scenario))
        except PathError as e:
            raise ScenarioError(file, [Issue(format_path((SET, text)), str(e), value)]) from None
        notes = {p: n for p, n in notes.items() if p[: len(resolved)] != resolved}
        notes[resolved] = f'(set by [set] "{text}" = {format_value(value)})'
    return merged, notes


def _merge(base: dict, over: dict, at: tuple) -> tuple[dict, list[tuple]]:
    """`over` on top of `base`; the paths whose values are the base's."""
    out, from_base = dict(base), []
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            out[key], inner = _merge(base[key], value, at + (key,))
            from_base += inner
        else:
            out[key] = value
    from_base += [at + (key,) for key in base if key not in over]
    return out, from_base


def _anchored(value, folder: Path, field: str = ""):
    """`value` with every relative path it gives a FILE_FIELDS field made absolute from
    `folder`: a field's own value, or, under a sweep's field path ("links.x.forward.trace"),
    each value listed."""
    if isinstance(value, dict):
        return {k: _anchored(v, folder, k.rsplit(".", 1)[-1]) for k, v in value.items()}
    if isinstance(value, list):
        return [_anchored(v, folder, field) for v in value]
    if field in FILE_FIELDS and isinstance(value, str) and not Path(value).is_absolute():
        return str((folder / value).absolute())
    return value


def _included_by(issue: Issue, file: str) -> Issue:
    return Issue(issue.path, f"{issue.problem} (included by {file})", issue.value)
