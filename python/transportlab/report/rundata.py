"""A run as the report sees it: `artefacts.rundir.RunDir` (the one reader) made tolerant.

Every optional artefact is optional here too: a missing or unreadable file gives None
(and a note in `RunData.problems`), never an exception, so a report can say what is
absent instead of failing. Only metrics.json is required. Records are exposed as the
plain dicts their JSON holds (`metrics`, `scenario`) for the HTML and plot code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from transportlab import metrics as M
from transportlab.artefacts.records import MetricsRecord
from transportlab.artefacts.rundir import RunDir, RunDirError

DEFAULT_BIN_S = 0.100


def as_float(v: Any) -> float:
    """A metric value as float; None/missing/non-numeric → NaN."""
    if v is None or isinstance(v, bool):
        return float("nan")
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


@dataclass
class RunData:
    """A run directory, loaded lazily."""

    dir: Path
    problems: list[str] = field(default_factory=list)

    @classmethod
    def load(cls, run_dir: str | Path) -> RunData:
        rd = cls(Path(run_dir))
        rd.record  # noqa: B018 - raises RunDirError on a missing or unreadable metrics.json
        return rd

    @cached_property
    def _run(self) -> RunDir:
        return RunDir(self.dir)

    @property
    def raw(self) -> Path:
        return self._run.raw

    @cached_property
    def record(self) -> MetricsRecord:
        return self._run.metrics

    @cached_property
    def metrics(self) -> dict:
        return self.record.dump()

    @cached_property
    def scenario(self) -> dict:
        try:
            return self._run.scenario.dump()
        except RunDirError as e:
            self.problems.append(str(e))
            return {}

    @property
    def run(self) -> dict:
        return self.metrics.get("run") or {}

    @property
    def name(self) -> str:
        r = self.run
        label = r.get("point") or ""
        base = r.get("scenario") or self.scenario.get("name") or self.dir.name
        rep = r.get("repetition")
        return f"{base}" + (f" [{label}]" if label else "") + (f" rep {rep}" if rep is not None else "")

    @property
    def t0_ns(self) -> int:
        t0 = self.run.get("t0_ns")
        return int(t0) if t0 is not None else 0

    @property
    def duration_s(self) -> float | None:
        d = self.run.get("duration_s", self.scenario.get("duration_s"))
        return float(d) if d is not None else None

    @property
    def end_ns(self) -> int | None:
        d = self.duration_s
        return None if d is None else self.t0_ns + int(round(d * 1e9))

    @property
    def bin_s(self) -> float:
        a = self.scenario.get("analysis") or {}
        b = a.get("bin", a.get("bin_s"))
        if isinstance(b, (int, float)) and not isinstance(b, bool) and b > 0:
            return float(b)
        return DEFAULT_BIN_S

    @property
    def flows(self) -> dict[str, dict]:
        return self.metrics.get("flows") or {}

    @property
    def probes(self) -> dict[str, dict]:
        return self.metrics.get("probes") or {}

    @property
    def links(self) -> dict[str, dict]:
        return self.metrics.get("links") or {}

    @cached_property
    def direction_names(self) -> dict[int, str]:
        """Direction index → name, from the engine's own table (metrics.json's link
        indices where the engine's statistics are missing)."""
        try:
            return dict(enumerate(self._run.direction_names))
        except RunDirError as e:
            self.problems.append(str(e))
        return {
            int(l["index"]): name
            for name, l in self.links.items()
            if isinstance(l, dict) and l.get("index") is not None
        }

    @cached_property
    def legs(self) -> dict[int, list[int]]:
        """Multipath direction index → its legs' indices ({} without the engine's table)."""
        try:
            return self._run.legs
        except RunDirError:
            return {}

    def direction_name(self, index: int | None) -> str:
        if index is None:
            return "?"
        return self.direction_names.get(int(index), f"direction {index}")

    def link_spec(self, index: int) -> dict:
        """The scenario's parameters (SI) of a direction, {} if unknown."""
        name = self.direction_names.get(index)
        if not name or "." not in name:
            return {}
        link, side = name.rsplit(".", 1)
        for l in self.scenario.get("links") or []:
            if l.get("name") == link:
                return l.get(side) or {}
        return {}

    def capacity_bps(self, index: int) -> float | None:
        name = self.direction_names.get(index)
        cap = (self.links.get(name) or {}).get("capacity_bps") if name else None
        if cap:
            return float(cap)
        rate = self.link_spec(index).get("rate")
        return float(rate) if isinstance(rate, (int, float)) and rate > 0 else None

    def fixed_delay_s(self, index: int) -> float:
        d = self.link_spec(index).get("delay")
        return float(d) if isinstance(d, (int, float)) else 0.0

    # ---- raw artefacts -------------------------------------------------------------

    @cached_property
    def records(self) -> np.ndarray | None:
        if not (self.raw / "packets.tlog").is_file():
            self.problems.append("raw/packets.tlog is missing")
            return None
        try:
            return self._run.records
        except (RunDirError, OSError, ValueError) as e:
            self.problems.append(f"raw/packets.tlog is unreadable: {e}")
            return None

    @cached_property
    def _log_flows(self) -> list[M.Flow]:
        if self.records is None or len(self.records) == 0:
            return []
        return list(M.flows(self.records)["flow"])

    def log_flows(self, flow_name: str) -> list[M.Flow]:
        """The concrete 5-tuples in the log that the flow's `data` tuple names (a port of 0
        in metrics.json means any port)."""
        data = (self.flows.get(flow_name) or {}).get("data")
        if not data:
            return []
        try:
            want = M.Flow(
                int(data["src"]),
                int(data["dst"]),
                int(data.get("sport") or 0),
                int(data.get("dport") or 0),
                int(data["proto"]),
            )
        except (KeyError, TypeError, ValueError):
            return []
        if want.sport and want.dport:
            return [want]
        return [
            f
            for f in self._log_flows
            if f.src == want.src
            and f.dst == want.dst
            and f.proto == want.proto
            and (not want.sport or f.sport == want.sport)
            and (not want.dport or f.dport == want.dport)
        ]

    def series(self, stem: str) -> pd.DataFrame | None:
        return self._run.series(stem)

    def summary(self, stem: str) -> dict | None:
        return self._run.summary(stem)

    def scenario_flow(self, name: str) -> dict:
        for f in self.scenario.get("flows") or []:
            if f.get("name") == name:
                return f
        return {}

    def sender_series(self, name: str) -> tuple[pd.DataFrame | None, str | None]:
        """The congestion-state series (TCP_INFO, or QUIC path statistics) of the flow's
        sending end (client for upload, server for download), falling back to the other
        end; (None, None) when neither exists."""
        f = self.flows.get(name) or {}
        sf = self.scenario_flow(name)
        proto = (f.get("protocol") or sf.get("protocol") or "").lower()
        if proto not in ("tcp", "quic"):
            return None, None
        download = (sf.get("direction") or "upload") == "download"
        order = ("server", "client") if download else ("client", "server")
        for side in order:
            df = self.series(f"{name}-{side}")
            if df is not None and len(df) and "t_ns" in df:
                return df, side
        return None, None

    def seconds(self, t_ns) -> np.ndarray:
        """CLOCK_MONOTONIC ns → seconds from scenario time 0."""
        a = np.asarray(t_ns)
        if a.dtype.kind in "iu":
            return (a.astype(np.int64) - self.t0_ns) / 1e9
        return (a.astype(np.float64) - float(self.t0_ns)) / 1e9
