"""Turns a resolved scenario's flows and probes into agent command lines: which server
to start on which host before time 0, and which client to start at which time."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .paths import binary
from .scenario.flows import Flow, Probe

# Clients get this long after the scenario's end to finish (a transfer draining a deep
# queue); the runner then stops the ones still running (SIGTERM: partial results).
CLIENT_GRACE_S = 5.0
# Servers outlive the clients' grace, so a server never closes a connection under a
# client that is still draining (late packets are still counted).
SERVER_GRACE_S = CLIENT_GRACE_S + 2.0


class NotSupported(RuntimeError):
    """A scenario asks for something transportlab does not do yet."""


@dataclass(frozen=True)
class Job:
    name: str  # flow or probe name
    host: str
    argv: list[str]
    start: float  # scenario seconds
    server: bool


def _d(seconds: float) -> str:
    return f"{max(1, int(round(seconds * 1e9)))}ns"


def flow_jobs(flow: Flow, server_addr: str, raw: Path, duration: float) -> list[Job]:
    agent = str(binary("agent"))
    s_sum, s_ser = raw / f"{flow.name}-server.json", raw / f"{flow.name}-server.arrow"
    c_sum, c_ser = raw / f"{flow.name}-client.json", raw / f"{flow.name}-client.arrow"
    serve_for = _d(duration + SERVER_GRACE_S)
    if flow.protocol == "tcp":
        server = [agent, "tcp-server", "--bind", f"0.0.0.0:{flow.port}", "--once", "--duration", serve_for,
                  "--summary", str(s_sum), "--series", str(s_ser)]
        client = [agent, "tcp-client", "--connect", f"{server_addr}:{flow.port}", "--summary", str(c_sum), "--series", str(c_ser)]
        for argv in (server, client):
            if flow.cc:
                argv += ["--cc", flow.cc]
            if flow.tcp_info_interval:
                argv += ["--tcp-info-interval", _d(flow.tcp_info_interval)]
        if flow.mss:
            client += ["--mss", str(flow.mss)]
        if flow.tls:
            server.append("--tls")
            client.append("--tls")
        if flow.objects is not None:
            client += ["--objects", str(flow.objects.count), "--object-size", str(flow.objects.size)]
        else:
            client += ["--direction", flow.direction]
            client += ["--bytes", str(flow.bytes)] if flow.bytes else ["--duration", _d(flow.end - flow.start)]
    elif flow.protocol == "udp":
        if flow.direction != "upload":
            raise NotSupported(f"flows.{flow.name}: udp flows send from `from` to `to` (direction = \"upload\") for now")
        server = [agent, "udp-recv", "--bind", f"0.0.0.0:{flow.port}", "--duration", serve_for,
                  "--summary", str(s_sum), "--series", str(s_ser)]
        client = [agent, "udp-send", "--to", f"{server_addr}:{flow.port}", "--size", str(flow.size), "--summary", str(c_sum)]
        client += ["--rate", f"{int(flow.rate)}bit"] if flow.rate else ["--interval", _d(flow.interval)]
        client += ["--count", str(flow.count)] if flow.count else ["--duration", _d(flow.end - flow.start)]
        if flow.burst > 1:
            client += ["--burst", str(flow.burst)]
    elif flow.protocol == "quic":
        server, client = _quic_argv(agent, flow, server_addr, serve_for)
        server += ["--summary", str(s_sum), "--series", str(s_ser)]
        client += ["--summary", str(c_sum), "--series", str(c_ser)]
    else:
        raise NotSupported(f"flows.{flow.name}: protocol {flow.protocol!r} is not supported yet (tcp, udp and quic are)")
    return [Job(flow.name, flow.to, server, 0.0, True), Job(flow.name, flow.from_, client, flow.start, False)]


def _quic_argv(agent: str, flow: Flow, server_addr: str, serve_for: str) -> tuple[list[str], list[str]]:
    """Both ends get the controller: the sending end's is the one that acts."""
    server = [agent, "quic-server", "--bind", f"0.0.0.0:{flow.port}", "--once", "--duration", serve_for]
    client = [agent, "quic-client", "--connect", f"{server_addr}:{flow.port}"]
    for argv in (server, client):
        argv += ["--cc", str(flow.cc)]
        for key, value in sorted(flow.cc_params.items()):
            text = str(value).lower() if isinstance(value, bool) else str(value)
            argv += ["--cc-param", f"{key}={text}"]
        if flow.mss:
            argv += ["--datagram-size", str(flow.mss)]
        if flow.rcvbuf:
            # The kernel doubles a requested buffer (bookkeeping overhead); rcvbuf is the
            # resulting size, as net.core.rmem_default would set it.
            argv += ["--rcvbuf", str(flow.rcvbuf // 2)]
    if flow.objects is not None:
        client += ["--objects", str(flow.objects.count), "--object-size", str(flow.objects.size),
                   "--streams", str(flow.streams)]  # fmt: skip
    elif flow.size is not None:
        per_s = flow.rate / (8 * flow.size) if flow.rate else 1 / flow.interval
        client += ["--message-size", str(flow.size), "--message-rate", f"{per_s:.9g}", "--duration", _d(flow.end - flow.start)]
        client += ["--direction", flow.direction]
    else:
        client += ["--direction", flow.direction]
        client += ["--bytes", str(flow.bytes)] if flow.bytes else ["--duration", _d(flow.end - flow.start)]
        if flow.streams > 1:
            client += ["--streams", str(flow.streams)]
    return server, client


def probe_jobs(probe: Probe, server_addr: str, raw: Path, duration: float) -> list[Job]:
    agent = str(binary("agent"))
    server = [agent, "echo", "--bind", f"0.0.0.0:{probe.port}", "--duration", _d(duration + SERVER_GRACE_S),
              "--stamp", "--summary", str(raw / f"{probe.name}-echo.json")]
    client = [agent, "probe", "--to", f"{server_addr}:{probe.port}", "--interval", _d(probe.interval),
              "--size", str(max(probe.size, 24)), "--summary", str(raw / f"{probe.name}.json"), "--series", str(raw / f"{probe.name}.arrow")]
    client += ["--count", str(probe.count)] if probe.count else ["--duration", _d(probe.end - probe.start)]
    return [Job(probe.name, probe.to, server, 0.0, True), Job(probe.name, probe.from_, client, probe.start, False)]
