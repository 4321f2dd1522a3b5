"""What the table scripts (records_table.py, web_table.py, hol_table.py,
workloads_table.py) share: the runs of a sweep folder, each read through the project's
one result reader (`RunDir`: metrics.json validated, a bad one refused naming the file),
and the Markdown table they print."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from transportlab.artefacts.rundir import RunDir


def run_dirs(folder: Path, pattern: str = "*/rep-*/metrics.json") -> list[RunDir]:
    """Every run under `folder` with a metrics.json matching `pattern`, in path order."""
    return [RunDir(p.parent) for p in sorted(Path(folder).glob(pattern))]


def arm(run: RunDir) -> str:
    """A repetition's sweep point without its axis name (`delivery=ordered` → `ordered`)."""
    return run.dir.parent.name.split("=", 1)[-1]


def flows(run: RunDir) -> dict[str, dict]:
    """The run's flows, by name, as its metrics.json has them."""
    return run.metrics.dump()["flows"]


def print_table(head: list[str], rows: Iterable[list[str]]) -> None:
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        print("| " + " | ".join(r) + " |")
