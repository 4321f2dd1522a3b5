"""What a flow kind is: the one place that knows a protocol's scenario fields, its agent
command lines and how its agents' summaries become metrics. The stages ask the kind;
none of them branches on a protocol's name. See `kinds/__init__.py` for the registry."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from transportlab import contract
from transportlab.scenario.errors import FieldIssue

if TYPE_CHECKING:
    import pandas as pd

    from transportlab.artefacts.rundir import RunDir
    from transportlab.plan.flows import Flow
    from transportlab.scenario.schema import FlowSpec

# Fields every flow has, whatever its kind.
COMMON_FIELDS = frozenset({"name", "from", "to", "protocol", "start", "stop", "port"})
# The fields of the lab's agent's transfers that tcp and quic flows both take.
AGENT_TRANSFER_FIELDS = frozenset(
    {"cc", "cc_params", "direction", "bytes", "objects", "mss", "size", "interval", "delivery", "playout"}
    | {"implementation", "application"}
)


@dataclass(frozen=True)
class Endpoints:
    """Agent command lines of one flow: the server starts before time 0, the client at
    the flow's start. Both write their summary and series where `Files` says."""

    server: list[str]
    client: list[str]


@dataclass(frozen=True)
class Files:
    server_summary: Path
    server_series: Path
    client_summary: Path
    client_series: Path
    server_qlog: Path  # QUIC only: qlog (JSON-SEQ) of the connection
    client_qlog: Path

    @classmethod
    def of(cls, raw: Path, name: str) -> Files:
        return cls(
            raw / f"{name}-server.json",
            raw / f"{name}-server.arrow",
            raw / f"{name}-client.json",
            raw / f"{name}-client.arrow",
            raw / f"{name}-server.sqlog",
            raw / f"{name}-client.sqlog",
        )


class FlowKind:
    """Base of the kinds: subclasses set the class attributes and implement the three
    stage hooks."""

    name: ClassVar[str]
    ip_proto: ClassVar[int]  # 6 (TCP) or 17 (UDP): how its packets appear in the log
    fields: ClassVar[frozenset[str]]  # accepted beyond COMMON_FIELDS
    default_cc: ClassVar[str | None] = None
    # Whether a flow's data has all arrived once its client has exited: true of the
    # reliable kinds (the client ends when its transfer is acknowledged or received); a
    # sender that exits after its last datagram leaves packets on the path, which a run
    # ending with its flows (`stop_when = "flows-done"`) must wait for.
    delivered_when_client_exits: ClassVar[bool] = True

    # --- scenario stage ---------------------------------------------------------------

    def check(self, spec: FlowSpec, given: set[str]) -> None:
        """Kind-specific checks of a flow table; raise FieldIssue. `given` holds the
        fields the file set (defaults are not in it)."""

    def check_cc(self, spec: FlowSpec) -> str | None:
        """The congestion control the flow runs (its default if unset); raise FieldIssue."""
        if spec.cc is not None or spec.cc_params is not None:
            field = "cc" if spec.cc is not None else "cc_params"
            raise FieldIssue(f"{self.name} has no congestion control", (field,))
        return None

    def bpf_congestion(self, flow: Flow) -> tuple[str, dict] | None:
        """(controller, parameters) when the flow's congestion control is one of the
        lab's BPF programs, which the runner loads before the flow starts; else None."""
        return None

    # --- plan stage -------------------------------------------------------------------

    def endpoints(self, flow: Flow, server_addr: str, files: Files, serve_for_s: float) -> Endpoints:
        raise NotImplementedError

    # --- metrics stage ----------------------------------------------------------------

    def metrics(self, run: RunDir, flow: dict[str, Any], client: dict, server: dict) -> dict[str, Any]:
        """Kind-specific fields of the flow's FlowMetrics from its agents' results
        (`client`, `server`: the summaries' "results", {} if absent)."""
        return {}


def check_cc_params(protocol: str, cc: str, given: dict | None, called: str) -> None:
    """Refuses (at cc_params.<key>) a parameter controller `cc` does not take (`called`
    names the controller in that message), a value outside the contract's description of
    it, and values that break a rule between parameters (the contract's)."""
    _, problem = contract.resolve_parameters(protocol, cc, given or {})
    if problem is not None:
        key, value, why, unknown = problem
        message = f"not a parameter of {called} ({why})" if unknown else f"{cc}'s {key} {why}"
        raise FieldIssue(message, ("cc_params", key), value)


def agent_binary() -> str:
    from transportlab.locations import binary

    return str(binary("agent"))


def server_argv(command: str, port: int, files: Files, serve_for_s: float, once: bool = True) -> list[str]:
    """A server end: listens on every address at `port` for at most `serve_for_s` (for one
    connection with `once`), writing its summary and series where `files` says."""
    argv = [agent_binary(), command, "--bind", f"0.0.0.0:{port}"] + (["--once"] if once else [])
    return argv + ["--duration", duration_arg(serve_for_s)] + summary_args(files.server_summary, files.server_series)


def client_argv(command: str, server_addr: str, port: int, files: Files) -> list[str]:
    """A client end: connects to `server_addr`:`port`, writing its summary and series where
    `files` says."""
    argv = [agent_binary(), command, "--connect", f"{server_addr}:{port}"]
    return argv + summary_args(files.client_summary, files.client_series)


def summary_args(summary: Path, series: Path | None) -> list[str]:
    return ["--summary", str(summary)] + (["--series", str(series)] if series else [])


def duration_arg(seconds: float) -> str:
    """A duration for the agent's command line (whole nanoseconds, at least 1)."""
    return f"{max(1, int(round(seconds * 1e9)))}ns"


def bulk_argv(flow) -> list[str]:
    """A bulk transfer's client arguments: its direction, and `bytes` or, without it, the
    flow's duration (the agents' shared flags)."""
    size = ["--bytes", str(flow.bytes)] if flow.bytes else ["--duration", duration_arg(flow.end - flow.start)]
    return ["--direction", flow.direction, *size]


def sender_results(client: dict, server: dict) -> tuple[dict, str]:
    """The data sender's results and side: the client's when it sent, else the server's
    first connection."""
    if client.get("sender") == "client":
        return client, "client"
    return (server.get("connections") or [{}])[0], "server"


def srtt_stats(series: pd.DataFrame | None) -> dict | None:
    """Smoothed-RTT distribution (ms) from an agent's series (`srtt_us` column)."""
    import numpy as np

    from transportlab import metrics as M

    if series is None or not len(series) or "srtt_us" not in series:
        return None
    v = series.loc[series["srtt_us"] > 0, "srtt_us"].to_numpy(dtype=float) / 1e3
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return None
    s = M.summarize(v)
    return {k: s[k] for k in ("mean", "p50", "p95", "p99")}
