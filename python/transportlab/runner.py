"""Runs scenarios: plan the runs (sweep points × repetitions, each with a derived seed),
and for each one build the network, start agents on schedule, wait, collect, tear down,
compute metrics and render the report. Finished runs are never redone or lost: a sweep
that is interrupted resumes where it stopped."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from . import catalogue
from .network import Network
from .report import render_run, render_sweep
from .scenario import load_points, resolve
from .scenario.flows import Resolved
from .schedule import CLIENT_GRACE_S, Job, flow_jobs, probe_jobs
from .seeds import derive_seed

DONE = "DONE"


@dataclass(frozen=True)
class PlannedRun:
    point_label: str
    point_values: dict
    repetition: int
    seed: int
    run_dir: Path
    resolved: Resolved
    point_axes: dict  # sweep axis name → this point's step label


def _point_dir(label: str) -> str:
    return label.replace("/", "_").replace(" ", "") or "base"


def plan(path: Path, out: Path, overrides: list[str] = ()) -> tuple[Path, list[PlannedRun]]:
    """All runs a scenario file asks for. Raises ScenarioError on a bad file."""
    points = load_points(path, overrides)
    first = resolve(points[0].scenario)
    sweep_dir = out / first.name
    runs = []
    for point in points:
        res = resolve(point.scenario)
        for rep in range(res.repetitions):
            seed = derive_seed(res.seed, point.label, rep)
            run_dir = sweep_dir / _point_dir(point.label) / f"rep-{rep}"
            runs.append(PlannedRun(point.label, dict(point.values), rep, seed, run_dir, res, dict(point.axes)))
    return sweep_dir, runs


def is_done(run_dir: Path) -> bool:
    return (run_dir / DONE).exists()


def scenario_record(run: PlannedRun, run_id: str) -> dict:
    """The scenario as run, in SI units (seconds, bits/s, bytes)."""
    r = run.resolved
    topo = r.topology

    def direction(d) -> dict:
        out = {k: v for k, v in asdict(d).items() if v not in (None, 0.0, False) or k in ("delay",)}
        if d.multipath is not None:  # what the legs carry together, for the metrics
            out.update(path_rate=d.path_rate, path_delay=d.path_delay)
        return out

    return {
        "name": r.name,
        "description": r.description,
        "duration_s": r.duration,
        "stop_when": r.stop_when,
        "seed": run.seed,
        "scenario_seed": r.seed,
        "repetition": run.repetition,
        "run_id": run_id,
        "point": {"label": run.point_label, "values": run.point_values, "axes": run.point_axes},
        "hosts": list(topo.hosts),
        "routers": list(r.routers),
        "addresses": {h: topo.address(h) for h in topo.hosts},
        "links": [
            {"name": l.name, "between": [l.a, l.b], "forward": direction(l.forward), "reverse": direction(l.reverse)}
            for l in topo.links
        ],
        "flows": [{**{k: v for k, v in asdict(f).items() if k != "from_"}, "from": f.from_,
                   "start_s": f.start, "end_s": f.end} for f in r.flows],
        "probes": [{**{k: v for k, v in asdict(p).items() if k != "from_"}, "from": p.from_} for p in r.probes],
        "sysctls": r.sysctls,
        "analysis": asdict(r.analysis),
    }


def execute(run: PlannedRun, run_id: str, on_progress=None) -> Path:
    """Runs one repetition of one point into `run.run_dir`; returns it."""
    r = run.resolved
    run_dir = run.run_dir
    if run_dir.exists():  # an unfinished attempt: start it again from scratch
        shutil.rmtree(run_dir)
    raw = run_dir / "raw"
    raw.mkdir(parents=True)
    record = scenario_record(run, run_id)
    (run_dir / "scenario.json").write_text(json.dumps(record, indent=1, default=str))

    jobs: list[Job] = []
    for f in r.flows:
        jobs += flow_jobs(f, r.topology.address(f.to), raw, r.duration)
    for p in r.probes:
        jobs += probe_jobs(p, r.topology.address(p.to), raw, r.duration)

    with Network(r.topology, raw, seed=run.seed, run_id=run_id, sysctls=r.sysctls) as net:
        for job in (j for j in jobs if j.server):
            net.start_server(job.host, job.argv, raw / f"{job.name}-{job.host}-server.stderr")
        t0 = time.monotonic_ns()
        clients: list[tuple[Job, subprocess.Popen]] = []
        for job in sorted((j for j in jobs if not j.server), key=lambda j: j.start):
            _sleep_until(t0 + int(job.start * 1e9))
            err = open(raw / f"{job.name}-client.stderr", "wb")
            clients.append((job, net.popen(job.host, job.argv, stdout=subprocess.DEVNULL, stderr=err)))
            err.close()
        deadline = t0 + int((r.duration + CLIENT_GRACE_S) * 1e9)
        flow_clients = [p for j, p in clients if j.name in {f.name for f in r.flows}]
        while time.monotonic_ns() < deadline:
            if r.stop_when == "flows-done" and flow_clients and all(p.poll() is not None for p in flow_clients):
                break
            if all(p.poll() is not None for _, p in clients):
                # Time 0 plus the duration is the end of the scenario even if every
                # client finished early: flows of other runs must not be compared over
                # different spans.
                _sleep_until(min(deadline, t0 + int(r.duration * 1e9)))
                break
            if on_progress:
                on_progress(min(1.0, (time.monotonic_ns() - t0) / 1e9 / r.duration))
            time.sleep(0.1)
        t_end = time.monotonic_ns()
        failures = [(j, p) for j, p in clients if p.poll() is not None and p.returncode != 0]
    for job, proc in failures:
        err = (raw / f"{job.name}-client.stderr").read_text(errors="replace").strip()
        raise RunError(f"{job.name} on {job.host} failed (exit {proc.returncode}): {err}")

    (raw / "t0_ns").write_text(str(t0))
    (raw / "t_end_ns").write_text(str(t_end))
    analyse(run_dir)
    (run_dir / DONE).write_text(time.strftime("%Y-%m-%dT%H:%M:%S"))
    return run_dir


def analyse(run_dir: Path) -> Path:
    """metrics.json, the catalogue row, plots and report, from the raw artefacts alone
    (so they can be recomputed without re-running); returns the report."""
    from .collect import write_metrics

    write_metrics(run_dir, t0_ns=int((run_dir / "raw" / "t0_ns").read_text()))
    catalogue.write(run_dir)
    return render_run(run_dir)


class RunError(RuntimeError):
    pass


def _sleep_until(t_ns: int) -> None:
    while (left := t_ns - time.monotonic_ns()) > 0:
        time.sleep(min(left / 1e9, 0.1))


def run_scenario(path: Path, out: Path, overrides: list[str] = (), progress: bool = True) -> tuple[Path, list[Path]]:
    """Every run of a scenario file (skipping those already done); renders the sweep
    report when there is more than one run. Returns (sweep dir, run dirs)."""
    import secrets

    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    sweep_dir, runs = plan(Path(path), Path(out), list(overrides))
    sweep_dir.mkdir(parents=True, exist_ok=True)
    todo = [r for r in runs if not is_done(r.run_dir)]
    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} runs"), TimeElapsedColumn())
    with Progress(*columns, disable=not progress, transient=False) as bar:
        overall = bar.add_task(f"{sweep_dir.name}", total=len(runs), completed=len(runs) - len(todo))
        current = bar.add_task("", total=1.0)
        for run in todo:
            label = f"{run.point_label or 'base'} rep {run.repetition}"
            bar.update(current, description=f"  {label}", completed=0)
            execute(run, secrets.token_hex(3), on_progress=lambda x: bar.update(current, completed=x))
            bar.update(current, completed=1.0)
            bar.advance(overall)
    run_dirs = [r.run_dir for r in runs]
    if len(runs) > 1:
        render_sweep(sweep_dir, run_dirs)
    return sweep_dir, run_dirs
