"""The runs a scenario file asks for: sweep points × repetitions, each with a derived
seed and its own run directory, and the record of the scenario as each one runs it."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from transportlab.artefacts.records import ScenarioRecord
from transportlab.plan.flows import Resolved
from transportlab.plan.resolve import resolve
from transportlab.plan.seeds import derive_seed
from transportlab.scenario import load_points
from transportlab.scenario import units as U


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


def numeric_values(values: dict) -> dict[str, tuple[float, str | None]]:
    """Each swept value that is a number, in SI units with its kind: rates, durations,
    sizes and percentages parsed as the scenario file's units are."""
    out = {}
    for path, v in values.items():
        if isinstance(v, bool):
            continue
        if isinstance(v, (int, float)):
            out[path] = (float(v), None)
            continue
        if not isinstance(v, str):
            continue
        s = v.strip()
        parsers = (("%", U.parse_percentage), ("rate", U.parse_rate), ("duration", U.parse_duration), ("size", U.parse_size))
        for kind, parse in parsers:
            if kind == "%" and not s.endswith("%"):
                continue
            try:
                out[path] = (float(parse(s)), kind)
                break
            except (ValueError, TypeError):
                continue
    return out


def scenario_record(run: PlannedRun, run_id: str) -> ScenarioRecord:
    """The scenario as run, in SI units (seconds, bits/s, bytes)."""
    r = run.resolved
    topo = r.topology

    def direction(d) -> dict:
        out = {k: v for k, v in asdict(d).items() if v not in (None, 0.0, False) or k in ("delay",)}
        if d.multipath is not None:  # what the legs carry together, for the metrics
            out.update(path_rate=d.path_rate, path_delay=d.path_delay)
        return out

    return ScenarioRecord.model_validate({
        "name": r.name,
        "description": r.description,
        "duration_s": r.duration,
        "stop_when": r.stop_when,
        "seed": run.seed,
        "scenario_seed": r.seed,
        "repetition": run.repetition,
        "run_id": run_id,
        "point": {"label": run.point_label, "values": run.point_values, "axes": run.point_axes,
                  "numeric": numeric_values(run.point_values)},
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
    })
