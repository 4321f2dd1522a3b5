"""Turns a resolved scenario's flows and probes into agent command lines: which server
to start on which host before time 0, and which client to start at which time."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from transportlab.kinds import Files, kind
from transportlab.kinds.base import agent_binary
from transportlab.kinds.base import duration_arg as _d
from transportlab.plan.flows import Flow, Probe

# Clients get this long after the scenario's end to finish (a transfer draining a deep
# queue); the runner then stops the ones still running (SIGTERM: partial results).
CLIENT_GRACE_S = 5.0
# Servers outlive the clients' grace, so a server never closes a connection under a
# client that is still draining (late packets are still counted).
SERVER_GRACE_S = CLIENT_GRACE_S + 2.0


@dataclass(frozen=True)
class Job:
    name: str  # flow or probe name
    host: str
    argv: list[str]
    start: float  # scenario seconds
    server: bool


def flow_jobs(flow: Flow, server_addr: str, raw: Path, duration: float) -> list[Job]:
    ends = kind(flow.protocol).endpoints(flow, server_addr, Files.of(raw, flow.name), duration + SERVER_GRACE_S)
    return [Job(flow.name, flow.to, ends.server, 0.0, True), Job(flow.name, flow.from_, ends.client, flow.start, False)]


def probe_jobs(probe: Probe, server_addr: str, raw: Path, duration: float) -> list[Job]:
    agent = agent_binary()
    server = [
        agent,
        "echo",
        "--bind",
        f"0.0.0.0:{probe.port}",
        "--duration",
        _d(duration + SERVER_GRACE_S),
        "--stamp",
        "--summary",
        str(raw / f"{probe.name}-echo.json"),
    ]
    client = [
        agent,
        "probe",
        "--to",
        f"{server_addr}:{probe.port}",
        "--interval",
        _d(probe.interval),
        "--size",
        str(max(probe.size, 24)),
        "--summary",
        str(raw / f"{probe.name}.json"),
        "--series",
        str(raw / f"{probe.name}.arrow"),
    ]
    client += ["--count", str(probe.count)] if probe.count else ["--duration", _d(probe.end - probe.start)]
    return [Job(probe.name, probe.to, server, 0.0, True), Job(probe.name, probe.from_, client, probe.start, False)]
