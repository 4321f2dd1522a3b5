"""The record of the scenario as a run runs it (`scenario.json`): SI units, the point's
values (as written and as numbers), the derived seed and the run's id."""

from __future__ import annotations

from dataclasses import asdict

from transportlab.artefacts.records import ScenarioRecord
from transportlab.plan.runs import PlannedRun
from transportlab.scenario import units as U


def numeric_values(values: dict) -> dict[str, tuple[float, str | None]]:
    """Each swept value that is a number, in SI units with its kind: rates, durations,
    sizes and percentages parsed as the scenario file's units are."""
    out: dict[str, tuple[float, str | None]] = {}
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


def scenario_record(run: PlannedRun, run_id: str, stacks: dict[str, str] | None = None) -> ScenarioRecord:
    """The scenario as run, in SI units (seconds, bits/s, bytes); `stacks`: a simulated
    run's protocol stacks by protocol (None: emulated, the hosts' own)."""
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
            "mode": "simulated" if stacks is not None else "emulated",
            "stacks": stacks or {},
        }
    )
