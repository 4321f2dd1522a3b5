"""The one reader (and the small writer) of a run directory:

    <run>/scenario.json      ScenarioRecord (written before the run starts)
    <run>/raw/               the raw artefacts: packets.tlog, engine.json (statistics,
                             including the direction table), engine-config.json, agent
                             summaries <name>-{client,server}.json and series *.arrow,
                             t0_ns / t_end_ns, failures.json (a run whose agents failed)
    <run>/metrics.json       MetricsRecord (the metrics stage)
    <run>/DONE               the run finished and was analysed

`RunDir` reads strictly: a missing required artefact raises `RunDirError` naming the
file. Optional artefacts (an agent's summary or series) read as None."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import ValidationError

from transportlab.artefacts.packetlog import read_records
from transportlab.artefacts.records import MetricsRecord, ScenarioRecord
from transportlab.network.netns import HOST_UDP_COUNTERS

DONE = "DONE"
FAILURES = "failures.json"
METRICS = "metrics.json"
SCENARIO = "scenario.json"


def receiver_records(series: Callable[[str], pd.DataFrame | None], flow: str) -> pd.DataFrame | None:
    """The per-record series of records flow `flow` (`series`: a run's reader by stem):
    its receiver writes it — the client for tcp and quic records
    (`<flow>-client-records`), the server for udp ones (`<flow>-server-records`)."""
    for stem in (f"{flow}-client-records", f"{flow}-server-records"):
        s = series(stem)
        if s is not None:
            return s
    return None


class RunDirError(RuntimeError):
    pass


def write_json(path: Path, obj: Any) -> None:
    """Writes atomically (a reader never sees half a file), so results already written
    survive an interrupted write."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=1, default=_json_default))
    tmp.replace(path)


def _json_default(o):
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"{type(o).__name__} is not JSON serialisable")


def read_json(path: Path) -> Any | None:
    """None if absent or unreadable."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def read_arrow(path: Path) -> pd.DataFrame | None:
    """An Arrow IPC file (file or stream format) as a DataFrame; None if absent/unreadable."""
    path = Path(path)
    if not path.is_file():
        return None
    import pyarrow as pa
    import pyarrow.ipc

    try:
        with pa.memory_map(str(path)) as src:
            try:
                table = pa.ipc.open_file(src).read_all()
            except pa.ArrowInvalid:
                src.seek(0)
                table = pa.ipc.open_stream(src).read_all()
        return table.to_pandas()
    except (OSError, pa.ArrowException):
        return None


def _record(path: Path, model):
    try:
        text = path.read_text()
    except OSError as e:
        raise RunDirError(f"{path}: cannot read ({e.strerror})") from None
    try:
        return model.model_validate_json(text)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise RunDirError(f"{path}: {where}: {first['msg']}") from None


@dataclass
class RunDir:
    dir: Path

    def __post_init__(self) -> None:
        self.dir = Path(self.dir)

    @property
    def raw(self) -> Path:
        return self.dir / "raw"

    @property
    def done(self) -> bool:
        return (self.dir / DONE).exists()

    @cached_property
    def scenario(self) -> ScenarioRecord:
        return _record(self.dir / SCENARIO, ScenarioRecord)

    @cached_property
    def metrics(self) -> MetricsRecord:
        return _record(self.dir / METRICS, MetricsRecord)

    @property
    def has_metrics(self) -> bool:
        return (self.dir / METRICS).is_file()

    def write_metrics(self, record: MetricsRecord) -> None:
        write_json(self.dir / METRICS, record.dump())
        self.__dict__.pop("metrics", None)

    @property
    def failures(self) -> list[dict]:
        """The agents that failed in this run's last attempt ([] if none)."""
        return read_json(self.raw / FAILURES) or []

    def _ns(self, name: str) -> int | None:
        try:
            return int((self.raw / name).read_text())
        except (OSError, ValueError):
            return None

    @property
    def t0_ns(self) -> int:
        t0 = self._ns("t0_ns")
        if t0 is None:
            raise RunDirError(f"{self.raw / 't0_ns'}: missing (the run did not start its clients)")
        return t0

    @property
    def t_end_ns(self) -> int | None:
        return self._ns("t_end_ns")

    @cached_property
    def records(self) -> np.ndarray:
        """The packet log (memory-mapped)."""
        path = self.raw / "packets.tlog"
        if not path.is_file():
            raise RunDirError(f"{path}: missing")
        return np.asarray(read_records(path))

    @cached_property
    def engine_stats(self) -> dict:
        stats = read_json(self.raw / "engine.json")
        if stats is None:
            raise RunDirError(f"{self.raw / 'engine.json'}: missing or unreadable (the engine did not exit cleanly)")
        return stats

    @property
    def host_udp_counters(self) -> dict[str, dict[str, int]]:
        """Each host's UDP counters at the run's end ({} for a simulated run, or one made
        before they were recorded)."""
        return read_json(self.raw / HOST_UDP_COUNTERS) or {}

    @cached_property
    def direction_names(self) -> list[str]:
        """Log direction index → name, as the engine numbered them (configured directions,
        then the legs of multipath directions as `<link>.<dir>.<leg>`). The engine's own
        table is the one source of this numbering."""
        dirs = self.engine_stats.get("directions")
        if not isinstance(dirs, list):
            raise RunDirError(f"{self.raw / 'engine.json'}: no direction table")
        return [str(d["name"]) for d in dirs]

    @cached_property
    def leg_indices(self) -> set[int]:
        """Direction indices that are legs inside a multipath direction."""
        return {i for i, d in enumerate(self.engine_stats.get("directions") or []) if d.get("leg_of") is not None}

    @cached_property
    def legs(self) -> dict[int, list[int]]:
        """Multipath direction index → the indices of its legs, from the engine's table."""
        out: dict[int, list[int]] = {}
        for i, d in enumerate(self.engine_stats.get("directions") or []):
            if d.get("leg_of") is not None:
                out.setdefault(int(d["leg_of"]), []).append(i)
        return out

    def summary(self, stem: str) -> dict | None:
        """An agent's summary (`raw/<stem>.json`), None if it wrote none."""
        return read_json(self.raw / f"{stem}.json")

    def series(self, stem: str) -> pd.DataFrame | None:
        """An agent's time series (`raw/<stem>.arrow`), None if absent."""
        return read_arrow(self.raw / f"{stem}.arrow")

    def records_series(self, flow: str) -> pd.DataFrame | None:
        """The per-record series of records flow `flow`, as its receiver wrote it."""
        return receiver_records(self.series, flow)
