"""Command lines of the `agent` binary (docs/agent.md), so callers never spell flags,
and helpers that run a server/client pair inside a live `Network`."""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

from transportlab.locations import binary
from transportlab.network.live import Network, NetworkError


def _ns(seconds: float) -> str:
    return f"{int(round(seconds * 1e9))}ns"


def _agent() -> str:
    return str(binary("agent"))


def echo(bind: str, port: int, stamp: bool = False) -> list[str]:
    """With `stamp`, the echo writes its receive time into each probe (one-way delays)."""
    return [_agent(), "echo", "--bind", f"{bind}:{port}"] + (["--stamp"] if stamp else [])


def probe(
    to: str, port: int, interval: float, count: int, summary: Path, series: Path | None = None, size: int = 64
) -> list[str]:
    argv = [
        _agent(),
        "probe",
        "--to",
        f"{to}:{port}",
        "--interval",
        _ns(interval),
        "--count",
        str(count),
        "--size",
        str(size),
        "--summary",
        str(summary),
    ]
    return argv + (["--series", str(series)] if series else [])


def tcp_server(
    bind: str, port: int, summary: Path, series: Path | None = None, cc: str | None = None, once: bool = True
) -> list[str]:
    argv = [_agent(), "tcp-server", "--bind", f"{bind}:{port}", "--summary", str(summary)]
    if cc:
        argv += ["--cc", cc]
    if once:
        argv.append("--once")
    return argv + (["--series", str(series)] if series else [])


def tcp_client(
    connect: str,
    port: int,
    summary: Path,
    *,
    duration: float | None = None,
    nbytes: int | None = None,
    cc: str | None = None,
    series: Path | None = None,
    direction: str = "upload",
) -> list[str]:
    argv = [
        _agent(),
        "tcp-client",
        "--connect",
        f"{connect}:{port}",
        "--summary",
        str(summary),
        "--direction",
        direction,
    ]
    if duration is not None:
        argv += ["--duration", _ns(duration)]
    if nbytes is not None:
        argv += ["--bytes", str(nbytes)]
    if cc:
        argv += ["--cc", cc]
    return argv + (["--series", str(series)] if series else [])


def read_summary(path: Path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise NetworkError(f"agent summary {path} missing or unreadable: {e}") from None


@dataclass
class PairResult:
    client: dict
    server: dict


def run_probes(
    net: Network,
    src: str,
    dst: str,
    workdir: Path,
    interval: float,
    count: int,
    port: int = 7000,
    tag: str = "probe",
    size: int = 64,
    stamp: bool = False,
) -> dict:
    """Probes from `src` to an echo server on `dst`; returns the probe summary's results
    (the series, one row per probe, is `workdir/<tag>.arrow`; `stamp`: the echo stamps
    its receive time)."""
    workdir.mkdir(parents=True, exist_ok=True)
    server = net.start_server(dst, echo("0.0.0.0", port, stamp), workdir / f"{tag}-echo.stderr")
    summary = workdir / f"{tag}.json"
    res = net.run(
        src,
        probe(net.address(dst), port, interval, count, summary, workdir / f"{tag}.arrow", size=size),
        timeout=interval * count + 10,
        stderr=subprocess.PIPE,
    )
    server.terminate()
    if res.returncode != 0:
        raise NetworkError(f"probe {src}->{dst} failed: {res.stderr.decode(errors='replace').strip()}")
    return read_summary(summary)["results"]


def run_tcp(
    net: Network,
    src: str,
    dst: str,
    workdir: Path,
    *,
    duration: float,
    cc: str = "cubic",
    port: int = 5001,
    tag: str = "tcp",
) -> PairResult:
    """A bulk TCP upload from `src` to `dst` for `duration` seconds."""
    workdir.mkdir(parents=True, exist_ok=True)
    server_summary = workdir / f"{tag}-server.json"
    server = net.start_server(dst, tcp_server("0.0.0.0", port, server_summary, cc=cc), workdir / f"{tag}-server.stderr")
    client_summary = workdir / f"{tag}-client.json"
    res = net.run(
        src,
        tcp_client(
            net.address(dst), port, client_summary, duration=duration, cc=cc, series=workdir / f"{tag}-client.arrow"
        ),
        timeout=duration + 30,
        stderr=subprocess.PIPE,
    )
    if res.returncode != 0:
        raise NetworkError(f"tcp {src}->{dst} failed: {res.stderr.decode(errors='replace').strip()}")
    try:
        server.wait(timeout=10)
    except subprocess.TimeoutExpired:
        server.terminate()
        server.wait()
    return PairResult(read_summary(client_summary)["results"], read_summary(server_summary)["results"])
