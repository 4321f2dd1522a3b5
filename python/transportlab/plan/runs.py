"""The runs a scenario file asks for: sweep points × repetitions, each with a derived
seed and its own run directory, and the record of the scenario as each one runs it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace
from pathlib import Path

from transportlab.artefacts.records import ScenarioRecord
from transportlab.plan.flows import Resolved
from transportlab.plan.resolve import resolve
from transportlab.plan.seeds import derive_seed
from transportlab.scenario import Scenario, load_points
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


def shortened(s: Scenario, seconds: float) -> Scenario:
    """The scenario squeezed into `seconds`, one repetition: every time in it (flow and
    probe starts and stops, the analysis window and bin) scaled by seconds / duration, so
    what overlaps still overlaps. For trying a file before running it in full."""
    k = min(1.0, seconds / s.duration)
    flows = [
        f.model_copy(update={"start": f.start * k, "stop": f.stop * k if f.stop is not None else None}) for f in s.flows
    ]
    probes = [
        p.model_copy(update={"start": p.start * k, "until": p.until * k if p.until is not None else None})
        for p in s.probes
    ]
    a = s.analysis
    analysis = a.model_copy(
        update={"window": [w * k for w in a.window] if a.window else None, "bin": min(a.bin, max(0.01, a.bin * k))}
    )
    return s.model_copy(
        update={"duration": s.duration * k, "repetitions": 1, "flows": flows, "probes": probes, "analysis": analysis}
    )


def plan(
    path: Path, out: Path, overrides: list[str] = (), smoke_s: float | None = None
) -> tuple[Path, list[PlannedRun]]:
    """All runs a scenario file asks for; with `smoke_s`, only its first point, once,
    shortened to that many seconds (into `<name>-smoke`). Raises ScenarioError on a bad
    file."""
    points = load_points(path, overrides)
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
        parsers = (
            ("%", U.parse_percentage),
            ("rate", U.parse_rate),
            ("duration", U.parse_duration),
            ("size", U.parse_size),
        )
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

    return ScenarioRecord.model_validate(
        {
            "name": r.name,
            "description": r.description,
            "duration_s": r.duration,
            "stop_when": r.stop_when,
            "seed": run.seed,
            "scenario_seed": r.seed,
            "repetition": run.repetition,
            "run_id": run_id,
            "point": {
                "label": run.point_label,
                "values": run.point_values,
                "axes": run.point_axes,
                "numeric": numeric_values(run.point_values),
            },
            "hosts": list(topo.hosts),
            "routers": list(r.routers),
            "addresses": {h: topo.address(h) for h in topo.hosts},
            "links": [
                {
                    "name": l.name,
                    "between": [l.a, l.b],
                    "forward": direction(l.forward),
                    "reverse": direction(l.reverse),
                }
                for l in topo.links
            ],
            "flows": [
                {
                    **{k: v for k, v in asdict(f).items() if k != "from_"},
                    "from": f.from_,
                    "start_s": f.start,
                    "end_s": f.end,
                }
                for f in r.flows
            ],
            "probes": [{**{k: v for k, v in asdict(p).items() if k != "from_"}, "from": p.from_} for p in r.probes],
            "sysctls": r.sysctls,
            "analysis": asdict(r.analysis),
        }
    )
