"""A study run: every experiment's runs under one design, each run not yet done (the
runner skips finished runs, so an interrupted study resumes), then the study report."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from transportlab.pipeline import FailedRun, is_done, run_scenario
from transportlab.plan.runs import PlannedRun, plan
from transportlab.run.simulate import refusals
from transportlab.scenario import Point
from transportlab.scenario.errors import Issue, ScenarioError
from transportlab.study.spec import FILE, Design, Experiment, Study

REPORT = "report.html"
RECORD = "study.json"
SMOKE_SECONDS = 3.0


@dataclass
class ExperimentPlan:
    experiment: Experiment
    design: Design
    sweep_dir: Path
    runs: list[PlannedRun]
    not_run: str | None = None  # why the experiment does not run in this mode (e.g. not in the simulator)
    failed: list[FailedRun] = field(default_factory=list)

    @property
    def done(self) -> list[PlannedRun]:
        return [r for r in self.runs if is_done(r.run_dir)]


@dataclass
class StudyOutcome:
    study: Study
    design: str
    dir: Path
    plans: list[ExperimentPlan]

    @property
    def report(self) -> Path:
        return self.dir / REPORT

    @property
    def failed(self) -> list[FailedRun]:
        return [f for p in self.plans for f in p.failed]


# Axes with fewer steps than this are a study's arms (protocols, implementations), never thinned.
THIN_MIN_STEPS = 5


def thinned(design: Design, file: str):
    """The point selection of a design: every `thin`-th step (and the last) of each axis
    of at least THIN_MIN_STEPS steps, then only the `points` it names (an unknown name is
    an error)."""

    def select(points: list[Point]) -> list[Point]:
        steps: dict[str, list[str]] = {}
        for p in points:
            for axis, label in p.axes.items():
                if label not in steps.setdefault(axis, []):
                    steps[axis].append(label)

        def kept(p: Point) -> bool:
            for axis, label in p.axes.items():
                i, last = steps[axis].index(label), len(steps[axis]) - 1
                if last + 1 >= THIN_MIN_STEPS and i % design.thin and i != last:
                    return False
            return True

        out = [p for p in points if kept(p)]
        if design.points is not None:
            labels = [p.label for p in points]
            unknown = [x for x in design.points if x not in labels]
            if unknown:
                raise ScenarioError(
                    file,
                    [
                        Issue("", f"the design names sweep point {x!r}, not one of: {', '.join(labels)}")
                        for x in unknown
                    ],
                )
            out = [p for p in points if p.label in design.points]
        return out

    return select


def _only_planned(select, labels: set[str]):
    """The design's selection, then only the points planned (the simulator's subset)."""

    def keep(points: list[Point]) -> list[Point]:
        return [p for p in select(points) if p.label in labels]

    return keep


def study_dir(study: Study, out: Path, smoke: bool, simulated: bool) -> Path:
    base = Path(out) / (study.name + ("-smoke" if smoke else ""))
    return base / "simulated" if simulated else base


def _overrides(e: Experiment, d: Design) -> list[str]:
    return list(e.set) + ([f"repetitions={d.repetitions}"] if d.repetitions is not None else [])


def plan_study(
    study: Study, out: Path, design: str, smoke: bool = False, simulated: bool = False
) -> list[ExperimentPlan]:
    """Every experiment's runs under `design` (nothing runs); a bad file raises."""
    if design not in study.designs:
        raise ScenarioError(
            str(study.folder / FILE),
            [Issue("designs", f"no design {design!r}; the file has {', '.join(study.designs)}")],
        )
    base = study_dir(study, out, smoke, False)
    plans = []
    for e in study.experiments:
        d = study.design_of(e, design)
        path = study.path_of(e)
        sweep_dir, runs = plan(
            path,
            base / "simulated" if simulated else base,
            _overrides(e, d),
            SMOKE_SECONDS if smoke else None,
            thinned(d, str(path)),
        )
        p = ExperimentPlan(e, d, sweep_dir, runs)
        if simulated:
            # The simulator runs the points it can (QUIC, smoltcp TCP bulk, UDP); the
            # rest are listed once per reason, with the points it refuses.
            refused = {r.point_label: refusals(r.resolved) for r in runs}
            if any(refused.values()):
                p.runs = [r for r in runs if not refused[r.point_label]]
                p.not_run = "not in the simulator: " + refused_points(refused)
        plans.append(p)
    return plans


def refused_points(refused: dict[str, list[tuple[str, str]]]) -> str:
    """Each reason once, with the points it refuses in sweep order (`where: why (n points:
    a, b, c, …)`)."""
    by_reason: dict[tuple[str, str], dict[str, None]] = {}
    for label, reasons in refused.items():
        for r in reasons:
            by_reason.setdefault(r, {})[label or "default"] = None
    parts = []
    for (where, why), labels in sorted(by_reason.items()):
        n, shown = len(labels), ", ".join(list(labels)[:3]) + (", …" if len(labels) > 3 else "")
        parts.append(f"{where}: {why} ({n} point{'s' if n > 1 else ''}: {shown})")
    return "; ".join(parts)


def check_named(study: Study, only: Sequence[str]) -> None:
    """Refuses an experiment name the study does not have."""
    unknown = [n for n in only if n not in {e.name for e in study.experiments}]
    if unknown:
        raise ScenarioError(
            str(study.folder / FILE),
            [
                Issue(
                    "experiments", f"no experiment {n!r}; the study has {', '.join(e.name for e in study.experiments)}"
                )
                for n in unknown
            ],
        )


def run_study(
    study: Study,
    out: Path,
    design: str,
    *,
    only: Sequence[str] = (),
    smoke: bool = False,
    simulated: bool = False,
    cluster: str | None = None,
    workers: int | None = None,
    progress: bool = True,
    report_only: bool = False,
    on_experiment=None,
) -> StudyOutcome:
    """Runs what is not done of the experiments (all, or those named in `only`), then
    writes study.json (the design and what ran) and the study report."""
    from transportlab.study.report import render_study

    check_named(study, only)
    plans = plan_study(study, out, design, smoke, simulated)
    for p in plans:
        if report_only or (only and p.experiment.name not in only) or not p.runs:
            continue
        if on_experiment:
            on_experiment(p)
        d = p.design
        outcome = run_scenario(
            study.path_of(p.experiment),
            study_dir(study, out, smoke, False),
            _overrides(p.experiment, d),
            progress=progress,
            smoke_s=SMOKE_SECONDS if smoke else None,
            simulated=simulated,
            cluster=cluster,
            workers=workers,
            select=_only_planned(thinned(d, str(study.path_of(p.experiment))), {r.point_label for r in p.runs}),
        )
        p.failed = outcome.failed
    where = study_dir(study, out, smoke, simulated)
    where.mkdir(parents=True, exist_ok=True)
    result = StudyOutcome(study, design, where, plans)
    _record(result, smoke, simulated)
    render_study(result, smoke=smoke, simulated=simulated)
    return result


def _record(o: StudyOutcome, smoke: bool, simulated: bool) -> None:
    doc = {
        "study": o.study.name,
        "design": o.design,
        "smoke": smoke,
        "mode": "simulated" if simulated else "emulated",
        "written": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "experiments": {
            p.experiment.name: {
                "file": p.experiment.file,
                "design": p.design.model_dump(),
                "planned": len(p.runs),
                "done": len(p.done),
                "not_run": p.not_run,
                "sweep_dir": str(p.sweep_dir),
            }
            for p in o.plans
        },
    }
    tmp = o.dir / (RECORD + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2))
    tmp.replace(o.dir / RECORD)
