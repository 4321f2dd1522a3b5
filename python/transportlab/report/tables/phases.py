"""A run's phases as a table: per flow, its throughput at its bottleneck in each phase
(a time span of the run, e.g. before, during and after a burst), and per probe, the
RTT percentiles in each phase. S0 E5's table; any run with phases can use it:

    tlab table phases RUN_DIR before=10s:20s burst1=20s:30s …

Throughput is what the flow's bottleneck direction carried in the span (the packet
log's departures, `metrics.throughput_by_flow`); RTT is the probe's, by send time."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from transportlab import metrics as M
from transportlab.artefacts.rundir import RunDir
from transportlab.scenario.units import parse_duration


@dataclass(frozen=True)
class Phase:
    name: str
    start_s: float
    end_s: float

    @classmethod
    def parse(cls, text: str) -> Phase:
        """`name=START:END` with durations as in scenario files (`20s`, `1.5min`)."""
        name, sep, span = text.partition("=")
        start, sep2, end = span.partition(":")
        if not (sep and sep2 and name):
            raise ValueError(f"a phase is NAME=START:END, e.g. burst1=20s:30s (got {text!r})")
        phase = cls(name, float(parse_duration(start)), float(parse_duration(end)))
        if phase.end_s <= phase.start_s:
            raise ValueError(f"phase {name}: its end must come after its start (got {text!r})")
        return phase


def flow_throughput(run: RunDir, phases: list[Phase]) -> dict[str, list[float]]:
    """Mean throughput (bit/s) of each flow in each phase, at the flow's bottleneck."""
    m = run.metrics.dump()
    out: dict[str, list[float]] = {}
    for name, flow in m["flows"].items():
        if flow.get("data") is None or flow.get("bottleneck") is None:
            out[name] = [float("nan")] * len(phases)
            continue
        key = M.Flow(**{k: flow["data"][k] for k in ("src", "dst", "sport", "dport", "proto")})
        row = []
        for p in phases:
            start, end = run.t0_ns + int(p.start_s * 1e9), run.t0_ns + int(p.end_s * 1e9)
            rates = M.throughput_by_flow(run.records, flow["bottleneck"], end - start, start, end, {name: key})
            row.append(float(rates[name].iloc[0]) if len(rates) else 0.0)
        out[name] = row
    return out


def probe_rtt(run: RunDir, phases: list[Phase]) -> dict[str, list[dict[str, float]]]:
    """RTT statistics (ms) of each probe's answered probes sent in each phase."""
    out: dict[str, list[dict[str, float]]] = {}
    for name in run.metrics.dump()["probes"]:
        series = run.series(name)
        row = []
        for p in phases:
            if series is None:
                row.append(M.summarize([]))
                continue
            t = series["send_ns"].to_numpy(dtype=np.int64) - run.t0_ns
            inside = (t >= p.start_s * 1e9) & (t < p.end_s * 1e9)
            rtt = series["rtt_ns"].to_numpy(dtype=float)[inside] / 1e6
            row.append(M.summarize(rtt))
        out[name] = row
    return out


def markdown(run: RunDir, phases: list[Phase]) -> str:
    head = "| | " + " | ".join(f"{p.name} ({p.start_s:g}–{p.end_s:g} s)" for p in phases) + " |"
    rule = "|---" * (len(phases) + 1) + "|"
    lines = [head, rule]
    for name, row in flow_throughput(run, phases).items():
        lines.append(f"| {name} throughput (Mbit/s) | " + " | ".join(f"{v / 1e6:.2f}" for v in row) + " |")
    for name, stats in probe_rtt(run, phases).items():
        for k in ("p50", "p95", "p99"):
            lines.append(f"| {name} RTT {k} (ms) | " + " | ".join(f"{s[k]:.1f}" for s in stats) + " |")
    return "\n".join(lines)


def table(run_dir: Path, phases: list[str]) -> str:
    """The table of a run's `NAME=START:END` phases."""
    return markdown(RunDir(run_dir), [Phase.parse(p) for p in phases])
