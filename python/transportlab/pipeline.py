"""The stages end to end: plan a scenario file's runs, execute each one not yet done,
turn its raw artefacts into metrics, a catalogue row and a report, and render the sweep.

Finished runs are never redone or lost: a sweep that is interrupted resumes where it
stopped. A run whose agents failed is recorded as failed (`raw/failures.json`, no
`DONE`), the sweep goes on with the next run, and the next `tlab run` tries it again."""

from __future__ import annotations

import secrets
import shutil
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from transportlab.artefacts import catalogue
from transportlab.artefacts.rundir import DONE, FAILURES, write_json
from transportlab.metrics.collect import write_metrics
from transportlab.plan.runs import PlannedRun, PointSelection, plan
from transportlab.report import render_run, render_sweep
from transportlab.run.execute import AgentFailure, execute
from transportlab.run.record import scenario_record
from transportlab.run.simulate import SMOLTCP, refusals, simulate, stacks
from transportlab.scenario.errors import Issue, ScenarioError


@dataclass(frozen=True)
class FailedRun:
    run_dir: Path
    label: str
    failures: list[AgentFailure]

    @classmethod
    def of_error(cls, run: PlannedRun, error: BaseException) -> FailedRun:
        """A run that ended with an error of its own (not an agent's), e.g. on a cluster worker."""
        return cls(
            run.run_dir, run.label, [AgentFailure("run", "runner", "runner", -1, f"{type(error).__name__}: {error}")]
        )

    def line(self) -> str:
        return f"FAILED {self.label} ({self.run_dir}): " + "; ".join(f.line() for f in self.failures)


@dataclass(frozen=True)
class Outcome:
    sweep_dir: Path
    run_dirs: list[Path]  # every planned run, in plan order
    failed: list[FailedRun]

    @property
    def report(self) -> Path:
        return self.sweep_dir / "report.html" if len(self.run_dirs) > 1 else self.run_dirs[0] / "report.html"


class RunsFailed(RuntimeError):
    """Raised by callers that need every run to have succeeded (`tlab validate`)."""

    def __init__(self, failed: list[FailedRun]):
        self.failed = failed
        super().__init__("\n".join(f.line() for f in failed))


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during a run of a sweep (the run's network already torn down):
    which run, and how many of the sweep are finished (kept; a rerun resumes)."""

    def __init__(self, run_dir: Path | None, finished: int, total: int):
        self.run_dir, self.finished, self.total = run_dir, finished, total
        where = f"during {run_dir}" if run_dir is not None else "between runs"
        super().__init__(
            f"interrupted {where}; {finished} of {total} run(s) finished and kept, "
            "the same `tlab run` again resumes with the rest"
        )


# A run starts only with this much free on the results' disk, or twice the largest run
# of the sweep so far if that is more: a run's artefacts (its packet log above all; one
# simulated study's runs at 1 Gbit/s once wrote ~40 GB between them) must never fill the
# disk under the results already written.
MIN_FREE_BYTES = 2 << 30


class DiskSpaceLow(RuntimeError):
    """Raised before a run when the results' disk has too little room for it."""


def check_free_space(out: Path, largest_run: int, next_run: Path, finished: int, total: int) -> None:
    free = shutil.disk_usage(out).free
    need = max(MIN_FREE_BYTES, 2 * largest_run)
    if free < need:
        gib = 1 << 30
        raise DiskSpaceLow(
            f"{out}: {free / gib:.1f} GiB free, and a run starts only with {need / gib:.1f} GiB "
            f"({MIN_FREE_BYTES / gib:g} GiB, or twice the largest run so far: {largest_run / gib:.1f} GiB); "
            f"stopped before {next_run}; {finished} of {total} run(s) finished and kept — with room made (or another --out), "
            "the same command resumes with the rest"
        )


def dir_size(path: Path) -> int:
    """Bytes of the files under `path`."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def is_done(run_dir: Path) -> bool:
    return (run_dir / DONE).exists()


def run_one(run: PlannedRun, on_progress=None, simulated: bool = False) -> FailedRun | None:
    run_id = secrets.token_hex(3)
    if simulated:
        failures = simulate(run, scenario_record(run, run_id, stacks(run.resolved)))
    else:
        failures = execute(run, run_id, scenario_record(run, run_id), on_progress)
    return finish(run, failures)


def finish(run: PlannedRun, failures: list[AgentFailure]) -> FailedRun | None:
    """After a run's raw artefacts are in its folder: records its failures, or analyses
    it and marks it DONE."""
    if failures:
        write_json(run.run_dir / "raw" / FAILURES, [asdict(f) for f in failures])
        return FailedRun(run.run_dir, run.label, failures)
    analyse(run.run_dir)
    (run.run_dir / DONE).write_text(time.strftime("%Y-%m-%dT%H:%M:%S"))
    return None


def analyse(run_dir: Path) -> Path:
    """metrics.json, the catalogue row, plots and report, from the raw artefacts alone
    (so they can be recomputed without re-running); returns the report."""
    write_metrics(run_dir)
    catalogue.write(run_dir)
    return render_run(run_dir)


def run_scenario(
    path: Path,
    out: Path,
    overrides: Sequence[str] = (),
    progress: bool = True,
    smoke_s: float | None = None,
    simulated: bool = False,
    cluster: str | None = None,
    workers: int | None = None,
    select: PointSelection | None = None,
) -> Outcome:
    """Every run of a scenario file (skipping those already done); renders the sweep
    report when there is more than one run. `smoke_s`: see `plan`. `simulated`: in the
    simulator, into `out/simulated/` (refused before anything runs if a flow cannot be).
    `cluster` (a Dask scheduler address, or "local" for `workers` local worker
    processes): the emulated runs go to the cluster's workers (`transportlab.cluster`)
    and come back into `out`. `select`: which sweep points run (see `plan`)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    sweep_dir, runs = plan(
        Path(path), Path(out) / "simulated" if simulated else Path(out), list(overrides), smoke_s, select
    )
    if simulated:
        problems = sorted({p for r in runs for p in refusals(r.resolved)})
        if problems:
            raise ScenarioError(str(path), [Issue(where, f"not in the simulator: {why}") for where, why in problems])
    else:
        only_simulated = sorted(
            {
                f"flows.{f.name}.implementation"
                for r in runs
                for f in r.resolved.flows
                if f.protocol == "tcp" and f.implementation == SMOLTCP
            }
        )
        if only_simulated:
            raise ScenarioError(
                str(path), [Issue(where, "smoltcp runs only in the simulator (--simulate)") for where in only_simulated]
            )
    sweep_dir.mkdir(parents=True, exist_ok=True)
    todo = [r for r in runs if not is_done(r.run_dir)]
    failed: list[FailedRun] = []
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} runs"),
        TimeElapsedColumn(),
    )
    current_run: Path | None = None
    try:
        with Progress(*columns, disable=not progress, transient=False) as bar:
            overall = bar.add_task(f"{sweep_dir.name}", total=len(runs), completed=len(runs) - len(todo))
            if cluster is not None:
                from transportlab.cluster import run_on_cluster

                for run, result in run_on_cluster(todo, cluster, workers):
                    outcome = finish(run, result) if isinstance(result, list) else FailedRun.of_error(run, result)
                    if outcome is not None:
                        failed.append(outcome)
                        if progress:
                            bar.console.print(f"[red]{outcome.line()}[/]", highlight=False)
                    bar.advance(overall)
                todo = []
            current = bar.add_task("", total=1.0)
            done_before = [r.run_dir for r in runs if is_done(r.run_dir)]
            largest, finished = max(map(dir_size, done_before), default=0), len(done_before)
            for run in todo:
                check_free_space(sweep_dir, largest, run.run_dir, finished, len(runs))
                current_run = run.run_dir
                bar.update(current, description=f"  {run.label}", completed=0)
                outcome = run_one(run, on_progress=lambda x: bar.update(current, completed=x), simulated=simulated)
                if outcome is not None:
                    failed.append(outcome)
                    if progress:
                        bar.console.print(f"[red]{outcome.line()}[/]", highlight=False)
                current_run = None
                largest = max(largest, dir_size(run.run_dir))
                finished += outcome is None
                bar.update(current, completed=1.0)
                bar.advance(overall)
    except KeyboardInterrupt:
        raise Interrupted(current_run, sum(is_done(r.run_dir) for r in runs), len(runs)) from None
    run_dirs = [r.run_dir for r in runs]
    if len(runs) > 1:
        render_sweep(sweep_dir, run_dirs)
    return Outcome(sweep_dir, run_dirs, failed)
