"""Read a scenario file, apply `--set path=value` overrides, validate, check the sweep."""

from __future__ import annotations

import copy
import os
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from transportlab.scenario.errors import Issue, ScenarioError
from transportlab.scenario.fieldpath import PathError, set_path
from transportlab.scenario.include import resolve_includes
from transportlab.scenario.schema import Scenario
from transportlab.scenario.validate import validate

_TOML_POS = re.compile(r"^(.*) \(at line (\d+), column (\d+)\)$")


def read_toml(path: str | os.PathLike) -> dict:
    """The raw document; I/O and syntax errors become a one-line ScenarioError."""
    file = str(path)
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except OSError as e:
        raise ScenarioError(file, [Issue("", f"cannot read the scenario file: {e.strerror or e}")]) from None
    except UnicodeDecodeError as e:
        raise ScenarioError(file, [Issue("", f"not UTF-8 text: {e.reason} at byte {e.start}")]) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        m = _TOML_POS.match(msg)
        if m:
            where, msg = f"line {m.group(2)}, column {m.group(3)}", m.group(1)
        else:
            where = ""
        raise ScenarioError(file, [Issue(where, f"invalid TOML: {msg}")]) from None


def parse_override(text: str) -> tuple[str, Any]:
    """`path=value`: the value is read as a TOML value (number, bool, string, array,
    inline table); anything that is not valid TOML is taken as a plain string, so
    `rate=10Mbit` works without quotes."""
    if "=" not in text:
        raise ValueError(f"expected path=value (got {text!r})")
    path, value = text.split("=", 1)
    path, value = path.strip(), value.strip()
    if not path:
        raise ValueError(f"expected path=value (got {text!r})")
    try:
        return path, tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        return path, value


def apply_overrides(raw: dict, overrides: Iterable[str], file: str = "<scenario>") -> tuple[dict, dict[tuple, str]]:
    """A copy of `raw` with the overrides applied, and notes marking what they set."""
    out = copy.deepcopy(raw)
    notes: dict[tuple, str] = {}
    for text in overrides:
        try:
            path, value = parse_override(text)
            resolved = set_path(out, path, value, Scenario)
        except (ValueError, PathError) as e:
            raise ScenarioError(file, [Issue(f"--set {text}", str(e))]) from None
        notes[tuple(resolved)] = f"(set by --set {path})"
    return out, notes


def load_raw(path: str | os.PathLike, overrides: Iterable[str] = ()) -> tuple[dict, dict[tuple, str]]:
    """The document with its `include`d base merged in and the overrides applied, and
    notes marking values that came from a base file or an override."""
    raw, notes = resolve_includes(read_toml(path), path, read_toml)
    raw, override_notes = apply_overrides(raw, overrides, str(path))
    return raw, {**override_notes, **notes}


def load_scenario(path: str | os.PathLike, overrides: Iterable[str] = ()) -> Scenario:
    """The validated scenario (the base point when it has a sweep). Every sweep point is
    validated too, so a bad sweep value is reported here, before anything runs."""
    from transportlab.scenario.sweep import expand

    file = str(path)
    raw, notes = load_raw(path, overrides)
    base_dir = Path(path).parent
    scenario = validate(raw, file, base_dir, notes)
    if scenario.sweep:
        expand(raw, file=file, base_dir=base_dir, notes=notes)
    return scenario


def load_points(path: str | os.PathLike, overrides: Iterable[str] = ()):
    """The runs a file asks for: one `Point` per sweep combination (one if no sweep)."""
    from transportlab.scenario.sweep import expand

    file = str(path)
    raw, notes = load_raw(path, overrides)
    base_dir = Path(path).parent
    validate(raw, file, base_dir, notes)
    return expand(raw, file=file, base_dir=base_dir, notes=notes)
