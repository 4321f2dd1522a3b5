"""What a study's design has done and has left, experiment by experiment (`tlab study
--status`): nothing runs and no report is written, so it can be asked while a long study
runs elsewhere."""

from __future__ import annotations

from collections.abc import Sequence

from transportlab.pipeline import is_done
from transportlab.study.run import ExperimentPlan

HEADER = ("experiment", "file", "points", "runs", "done", "left")


def status_table(plans: Sequence[ExperimentPlan]) -> str:
    """One row per experiment and a total; then the point a run of the study would start
    with (the first experiment's first point with a run not done), and what the simulator
    refuses, where it does."""
    rows, pending = [], None
    for p in plans:
        left = [r for r in p.runs if not is_done(r.run_dir)]
        if left and pending is None:
            pending = (p, left[0])
        points = len({r.point_label for r in p.runs})
        rows.append((p.experiment.name, p.experiment.file, points, len(p.runs), len(p.runs) - len(left), len(left)))
    total = ("total", "", *(sum(int(r[i]) for r in rows) for i in range(2, 6)))
    lines = _aligned([HEADER, *rows, total])
    if pending:
        p, r = pending
        lines.append(f"next: {p.experiment.name} {r.label}")
    else:
        lines.append("nothing left: every planned run is done")
    lines += [f"{p.experiment.name}: {p.not_run}" for p in plans if p.not_run]
    return "\n".join(lines)


def _aligned(rows: list[tuple]) -> list[str]:
    cells = [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(HEADER))]

    def line(row: list[str]) -> str:
        # Names left, counts right.
        return "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths))).rstrip()

    return [line(row) for row in cells]
