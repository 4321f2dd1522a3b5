"""Emulated against simulated: one scenario run both ways (`tlab run --both`, or `tlab
compare` of an emulated and a simulated source) side by side per point and flow — both
values of each metric and their ratio (simulated / emulated) in one row — with every
metric outside its agreement band marked. The bands are stated here, once, and printed
with the table."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from transportlab.artefacts.metric_registry import COMPARE
from transportlab.report.html import metric_format


@dataclass(frozen=True)
class Band:
    """Simulated agrees with emulated when |sim − emu| ≤ max(relative·|emu|, absolute)."""

    relative: float
    absolute: float = 0.0
    # How the absolute tolerance reads, when the metric's unit does not say it.
    absolute_text: str | None = None

    def holds(self, emulated: float, simulated: float) -> bool:
        return abs(simulated - emulated) <= max(self.relative * abs(emulated), self.absolute)

    def describe(self, unit: str) -> str:
        text = f"± {self.relative * 100:g} %"
        if not self.absolute:
            return text
        return f"{text} or {self.absolute_text or f'± {self.absolute:g} {unit}'}"


# The agreement bands, by catalogue metric: rates and times ± 5 %, delays ± 10 % or
# ± 1 ms (a millisecond is below what a queue of a few packets adds at 10 Mbit/s),
# jitter ± 25 % or ± 0.5 ms, loss ± 25 % or ± 0.1 point, retransmissions ± 25 % or ± 2.
BANDS: dict[str, Band] = {
    "throughput_bps": Band(0.05),
    "goodput_bps": Band(0.05),
    "completion_s": Band(0.05),
    "queueing_delay_mean_ms": Band(0.10, 1.0),
    "queueing_delay_p99_ms": Band(0.10, 1.0),
    "path_delay_p95_ms": Band(0.10, 1.0),
    "rtt_mean_ms": Band(0.10, 1.0),
    "jitter_rfc3550_ms": Band(0.25, 0.5),
    "loss_rate": Band(0.25, 0.001, "± 0.1 point"),
    "retransmissions": Band(0.25, 2.0),
}
METRICS = [m for m in COMPARE if m.name in BANDS]


def mode_of(runs) -> str | None:
    """ "emulated" or "simulated" if every run of a source was run that way."""
    modes = {(rd.scenario.get("mode") or "emulated") for rd in runs}
    return modes.pop() if len(modes) == 1 else None


def pick_pair(sources: Sequence) -> tuple | None:
    """(emulated source, simulated source) when the sources are exactly one of each."""
    if len(sources) != 2:
        return None
    by_mode = {mode_of(s.runs): s for s in sources}
    if set(by_mode) != {"emulated", "simulated"}:
        return None
    return by_mode["emulated"], by_mode["simulated"]


def _value(row: pd.Series | None, metric: str) -> float:
    if row is None:
        return np.nan
    v = row.get(f"{metric}_mean")
    return float(v) if v is not None and not pd.isna(v) else np.nan


def paired(agg: pd.DataFrame, emulated: str, simulated: str) -> pd.DataFrame:
    """One row per point × flow present in either source: for each banded metric m,
    m_emulated, m_simulated, m_ratio and m_agrees (True, False, or None when a side
    lacks the value). `agg` is `compare.compare_table`'s (means over repetitions)."""
    rows = []
    keyed = {(str(r["source"]), str(r.get("point") or ""), str(r["flow"])): r for _, r in agg.iterrows()}
    keys = list(dict.fromkeys((p, f) for _, p, f in keyed))
    for point, flow in keys:
        emu, sim = keyed.get((emulated, point, flow)), keyed.get((simulated, point, flow))
        row: dict = {"point": point, "flow": flow}
        for m in METRICS:
            e, s = _value(emu, m.name), _value(sim, m.name)
            row[f"{m.name}_emulated"], row[f"{m.name}_simulated"] = e, s
            both = not (np.isnan(e) or np.isnan(s))
            row[f"{m.name}_ratio"] = s / e if both and e != 0 else np.nan
            row[f"{m.name}_agrees"] = BANDS[m.name].holds(e, s) if both else None
        rows.append(row)
    return pd.DataFrame(rows)


def shown_metrics(pairs: pd.DataFrame):
    """The banded metrics either source has a value of."""
    return [
        m
        for m in METRICS
        if f"{m.name}_emulated" in pairs
        and not (pairs[f"{m.name}_emulated"].isna().all() and pairs[f"{m.name}_simulated"].isna().all())
    ]


def disagreements(pairs: pd.DataFrame) -> list[tuple[str, str, str, str, float]]:
    """(point, flow, metric label, "emulated E, simulated S" in the metric's unit, S / E)
    of every value outside its band."""
    out = []
    for _, r in pairs.iterrows():
        for m in METRICS:
            if r.get(f"{m.name}_agrees") is False:
                e, s, f = r[f"{m.name}_emulated"], r[f"{m.name}_simulated"], metric_format(m.name)
                out.append((r["point"], r["flow"], m.label, f"emulated {f(e)}, simulated {f(s)}", s / e if e else 0.0))
    return out


def summary_lines(pairs: pd.DataFrame) -> list[str]:
    """What `tlab run --both` prints: how many values agree, then each one that does not."""
    checked = sum(r.get(f"{m.name}_agrees") is not None for _, r in pairs.iterrows() for m in METRICS)
    off = disagreements(pairs)
    lines = [f"emulated vs simulated: {checked - len(off)} of {checked} values within their agreement band"]
    for point, flow, label, values, ratio in off:
        where = f"{point} {flow}".strip()
        lines.append(f"  OUTSIDE  {where}: {label} {values} ({f'{ratio:.3g}×' if ratio else '—'})")
    return lines
