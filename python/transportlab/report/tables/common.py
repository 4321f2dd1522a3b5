"""What the results tables share: the runs of a sweep folder, each read through the one
run reader (`RunDir`: metrics.json validated, a bad one refused naming the file), and the
Markdown they print."""

from __future__ import annotations

import math
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from transportlab.artefacts.rundir import RunDir, RunDirError


class TableError(ValueError):
    """A folder that holds no run a table can be made of."""


def run_dirs(folder: Path, pattern: str = "*/rep-*/metrics.json") -> list[RunDir]:
    """Every run under `folder` with a metrics.json matching `pattern`, in path order."""
    folder = Path(folder)
    if not folder.is_dir():
        raise RunDirError(f"{folder}: not a folder")
    runs = [RunDir(p.parent) for p in sorted(folder.glob(pattern))]
    if not runs:
        raise TableError(f"{folder}: no analysed run (no {pattern})")
    return runs


def runs_in(folder: Path) -> list[RunDir]:
    """`folder` itself when it is one run, else every run below it (`run_dirs`)."""
    return [RunDir(folder)] if (folder / "metrics.json").is_file() else run_dirs(folder)


def run_label(run: RunDir) -> str:
    """A run as a table's first column names it: its sweep point and repetition."""
    return f"{run.dir.parent.name}/{run.dir.name}"


def cell(v: float | None, fmt: str) -> str:
    """A number formatted for a table, "–" where there is none (None, NaN, infinite)."""
    return "–" if v is None or not math.isfinite(v) else format(v, fmt)


def arm(run: RunDir) -> str:
    """A repetition's sweep point without its axis name (`delivery=ordered` → `ordered`)."""
    return run.dir.parent.name.split("=", 1)[-1]


def flows(run: RunDir) -> dict[str, dict]:
    """The run's flows, by name, as its metrics.json has them."""
    return run.metrics.dump()["flows"]


def markdown(head: list[str], rows: Iterable[list[str]]) -> list[str]:
    """A Markdown table's lines."""
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + ["| " + " | ".join(r) + " |" for r in rows]


def markdown_frame(df: pd.DataFrame) -> list[str]:
    """A data frame as a Markdown table ("–" for a missing value)."""

    def cell(v) -> str:
        return "–" if v is None or (isinstance(v, float) and pd.isna(v)) else str(v)

    return markdown(list(df.columns), ([cell(v) for v in row] for row in df.itertuples(index=False)))
