"""The runs a scenario file asks for: sweep points × repetitions, each with a derived
seed and its own run directory."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from transportlab.plan.flows import Resolved
from transportlab.plan.resolve import resolve
from transportlab.plan.seeds import derive_seed
from transportlab.scenario import Point, Scenario, load_points

# Chooses which of a file's sweep points run (a study's design thins a sweep).
PointSelection = Callable[[list[Point]], list[Point]]


@dataclass(frozen=True)
class PlannedRun:
    point_label: str
    point_values: dict
    repetition: int
    seed: int
    run_dir: Path
    resolved: Resolved
    point_axes: dict  # sweep axis name → this point's step label

    @property
    def label(self) -> str:
        return f"{self.point_label or 'base'} rep {self.repetition}"


def _point_dir(label: str) -> str:
    return label.replace("/", "_").replace(" ", "") or "base"


# The least a shortened N-byte flow still moves: dozens of packets, so it has a window to grow.
SHORTENED_MIN_BYTES = 64 * 1024


def shortened(s: Scenario, seconds: float) -> Scenario:
    """The scenario squeezed into `seconds`, one repetition: every time in it (flow and
    probe starts and stops, the analysis window and bin) scaled by k = seconds / duration,
    so what overlaps still overlaps, and every amount that ends a flow or a probe (a
    flow's `bytes` and `count`, a probe's `count`) by the same k, so a transfer sized for
    the whole duration ends within the shortened one instead of being cut off by the
    runner after its grace. A flow's `objects` stay as they are: they are the page the
    experiment loads (S0 E2's ten objects on ten streams), not an amount of time.
    For trying a file before running it in full."""
    k = min(1.0, seconds / s.duration)

    def fewer(n: int | None) -> int | None:
        return None if n is None else max(1, round(n * k))

    def smaller(n: int | None) -> int | None:
        return None if n is None else min(n, max(SHORTENED_MIN_BYTES, round(n * k)))

    def scaled(item, end: str, **more):
        """A flow or a probe (its end time in field `end`) with its start, end and count
        scaled by k, and the `more` fields set."""
        stop = getattr(item, end)
        update = {"start": item.start * k, end: None if stop is None else stop * k, "count": fewer(item.count)}
        return item.model_copy(update=update | more)

    flows = [scaled(f, "stop", bytes=smaller(f.bytes)) for f in s.flows]
    probes = [scaled(p, "until") for p in s.probes]
    a = s.analysis
    analysis = a.model_copy(
        update={"window": [w * k for w in a.window] if a.window else None, "bin": min(a.bin, max(0.01, a.bin * k))}
    )
    return s.model_copy(
        update={"duration": s.duration * k, "repetitions": 1, "flows": flows, "probes": probes, "analysis": analysis}
    )


def plan(
    path: Path,
    out: Path,
    overrides: Sequence[str] = (),
    smoke_s: float | None = None,
    select: PointSelection | None = None,
) -> tuple[Path, list[PlannedRun]]:
    """All runs a scenario file asks for (of the points `select` keeps); with `smoke_s`,
    only its first point, once, shortened to that many seconds (into `<name>-smoke`).
    Raises ScenarioError on a bad file."""
    points = load_points(path, overrides)
    if select is not None and smoke_s is None:
        points = select(points)
    if smoke_s is not None:
        points = [replace(points[0], scenario=shortened(points[0].scenario, smoke_s))]
    first = resolve(points[0].scenario)
    sweep_dir = out / (first.name + ("-smoke" if smoke_s is not None else ""))
    runs = []
    for point in points:
        res = resolve(point.scenario)
        for rep in range(res.repetitions):
            seed = derive_seed(res.seed, point.label, rep)
            run_dir = sweep_dir / _point_dir(point.label) / f"rep-{rep}"
            runs.append(PlannedRun(point.label, dict(point.values), rep, seed, run_dir, res, dict(point.axes)))
    return sweep_dir, runs
