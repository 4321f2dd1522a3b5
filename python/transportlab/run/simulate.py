"""Executes one planned run in the simulator (`tlab-sim`, docs/simulator.md) instead of
the emulated network: the same engine configuration with simulated hosts, the flows and
probes as the simulator's endpoints take them. It writes the raw artefacts an emulated
run has (packet log, engine statistics, the agents' summaries, t0/t_end), so metrics,
plots, report and catalogue read it unchanged.

What the simulator cannot run is refused before anything runs (`refusals`), naming the
flow and why — never replaced by something else."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from transportlab.artefacts.records import ScenarioRecord
from transportlab.artefacts.rundir import SCENARIO, write_json
from transportlab.locations import binary
from transportlab.network.buffers import tcp_buffer_limits, tcp_rmem
from transportlab.plan.flows import Flow, Probe, Resolved
from transportlab.plan.runs import PlannedRun
from transportlab.run.execute import AgentFailure
from transportlab.scenario.tcp_rmem import TCP_RMEM, parse_tcp_rmem
from transportlab.stacks.web import AGENT

# The simulated run's time 0 (virtual ns): away from 0 so no time is ever negative.
T0_NS = 1_000_000_000
# Which stack plays each protocol in the simulator (recorded in scenario.json): TCP is
# the lab's own (crates/tcp) unless a flow names smoltcp as its `implementation`.
STACKS = {"quic": "quinn-proto", "tcp": "transportlab-tcp", "udp": "transportlab udp"}
SMOLTCP = "smoltcp"
# The congestion controls both simulated TCPs have (crates/tcp/src/cc, smoltcp's CONTROLLERS).
SIM_TCP_CC = ("reno", "cubic")


def tcp_stack(flow) -> str:
    """The stack that plays a tcp flow in the simulator."""
    return SMOLTCP if flow.implementation == SMOLTCP else STACKS["tcp"]


def stacks(r: Resolved) -> dict[str, str]:
    """The stacks a run uses, by protocol (several TCP stacks joined with " + ")."""
    out: dict[str, str] = {}
    for f in r.flows:
        name = tcp_stack(f) if f.protocol == "tcp" else STACKS.get(f.protocol)
        if name is None:
            continue
        known = out.get(f.protocol)
        out[f.protocol] = name if known in (None, name) else " + ".join(sorted({*known.split(" + "), name}))
    return out


SIM_TIMEOUT_S = 3600
# Why a QUIC flow's own UDP receive buffer is refused (S1's enlarged-buffer arm): the
# simulated QUIC ends have no socket; each datagram is handed to quinn-proto the instant
# it arrives, so no buffer could ever hold more than one, and the setting would change
# nothing. Every simulated QUIC run is, in that sense, a reader that never falls behind.
QUIC_RCVBUF_WHY = (
    "a UDP socket receive buffer; the simulated QUIC ends have no socket and read each datagram the "
    "instant it arrives, so no buffer size could change the run: run it emulated"
)


def refusals(r: Resolved) -> list[tuple[str, str]]:
    """(field path, why) for each flow (and option) of `r` the simulator cannot run;
    empty if it can run all of it."""
    out: list[tuple[str, str]] = []
    for f in r.flows:
        where = f"flows.{f.name}"
        if f.protocol not in STACKS:
            out.append((where, f"protocol {f.protocol!r} is not simulated; run it emulated"))
        elif f.page is not None:
            out.append(
                (f"{where}.page", "web pages need the agent's page client; the simulator runs none: run them emulated")
            )
        elif f.delivery is not None:
            out.append(
                (
                    f"{where}.delivery",
                    f"records (delivery {f.delivery!r}) need the agent's record receiver; the simulator "
                    "runs none: run them emulated",
                )
            )
        elif f.protocol == "tcp" and f.cc not in SIM_TCP_CC:
            out.append((f"{where}.cc", f"{f.cc!r} is a kernel control; {tcp_stack(f)} has {' and '.join(SIM_TCP_CC)}"))
        elif f.protocol == "tcp" and f.application != AGENT:
            out.append((f"{where}.application", "HTTP servers and curl are real processes: run them emulated"))
        elif f.protocol == "quic" and f.implementation not in (None, "quinn"):
            out.append(
                (f"{where}.implementation", f"{f.implementation} is a real process (the simulator runs quinn-proto)")
            )
        elif f.protocol == "tcp" and (f.objects is not None or f.tls or f.size is not None):
            out.append((where, "the simulator runs TCP bulk transfers (bytes or a duration) without TLS"))
        elif f.protocol == "quic" and f.rcvbuf:
            out.append((f"{where}.rcvbuf", QUIC_RCVBUF_WHY))
        elif f.protocol == "udp" and f.direction != "upload":
            out.append((f"{where}.direction", "UDP goes from client to server"))
    if r.capture is not None:
        out.append(("capture", "the simulator writes no pcapng capture yet"))
    out += _sysctl_refusals(r)
    return out


def _sysctl_refusals(r: Resolved) -> list[tuple[str, str]]:
    """The scenario's kernel settings the simulator cannot honour: every sysctl but
    tcp_rmem, which the simulator's TCP takes (and smoltcp, with fixed rings, cannot)."""
    out: list[tuple[str, str]] = []
    for host, values in r.sysctls.items():
        for name, value in values.items():
            where = f'sysctls.{host}."{name}"'
            if name != TCP_RMEM:
                out.append((where, f"the simulated hosts have no kernel settings but {TCP_RMEM} (the simulated TCP's)"))
                continue
            parsed = parse_tcp_rmem(value)
            if parsed is None or not parsed[0] <= parsed[1] <= parsed[2]:
                out.append((where, f"{value!r}: the simulated TCP takes min ≤ default ≤ max"))
            for f in r.flows:
                if f.protocol == "tcp" and tcp_stack(f) == SMOLTCP and f.receiver == host:
                    out.append((where, f"flows.{f.name} runs on smoltcp, whose buffers are fixed 8 MiB rings"))
    return out


def _placed(x: Flow | Probe, hosts: list[str]) -> dict:
    """Where and when a flow or probe runs, in the simulator's terms."""
    return {
        "name": x.name,
        "client": hosts.index(x.from_),
        "server": hosts.index(x.to),
        "port": x.port,
        "start_ns": round(x.start * 1e9),
        "end_ns": round(x.end * 1e9),
    }


def sim_config(run: PlannedRun, raw: Path) -> dict:
    r = run.resolved
    topo = r.topology
    hosts = list(topo.hosts)
    network = topo.engine_config(
        {h: {"kind": "simulated"} for h in hosts}, run.seed, str(raw / "packets.tlog"), str(raw / "engine.json")
    )
    flows = []
    for f in r.flows:
        flow = _placed(f, hosts) | {"protocol": f.protocol, "direction": f.direction, "bytes": f.bytes}
        if f.protocol == "tcp":
            flow["cc"] = f.cc
            flow["size"] = f.mss
            flow["stack"] = tcp_stack(f)
            # The buffer settings the emulated hosts get: the receiver's tcp_rmem (the
            # scenario's, if it sets it) and the sender's send-buffer limit.
            flow["rmem"] = list(tcp_rmem(topo, f.receiver, r.sysctls))
            flow["sndbuf"] = tcp_buffer_limits(topo, f.sender)[1]
        elif f.protocol == "quic":
            flow["cc"] = f.cc
            flow["cc_params"] = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in f.cc_params.items()}
            flow["size"] = f.mss
            flow["streams"] = f.streams
            flow["qlog"] = f.qlog
            if f.objects is not None:  # as the agent's --objects/--object-size/--streams
                flow["objects"] = f.objects.count
                flow["object_size"] = f.objects.size
            if f.size is not None:  # constant-rate messages, as the agent's --message-size/--message-rate
                flow["message_size"] = f.size
                interval = f.interval if f.interval else f.size * 8 / f.rate if f.rate else None
                flow["interval_ns"] = round(interval * 1e9) if interval else None
        else:
            assert f.size is not None  # the schema requires it for udp
            flow["size"] = f.size
            interval = f.interval if f.interval else f.burst * f.size * 8 / f.rate if f.rate else None
            flow["interval_ns"] = round(interval * 1e9) if interval else None
            flow["burst"] = f.burst
            flow["count"] = f.count
        flows.append(flow)
    probes = [
        _placed(p, hosts) | {"interval_ns": round(p.interval * 1e9), "count": p.count, "size": max(p.size, 24)}
        for p in r.probes
    ]
    return {
        "network": network,
        "addresses": [topo.address(h) for h in hosts],
        "seed": run.seed,
        "t0_ns": T0_NS,
        "duration_ns": round(r.duration * 1e9),
        "stop_when_flows_done": r.stop_when == "flows-done",
        "raw_dir": str(raw),
        "flows": flows,
        "probes": probes,
    }


def simulate(run: PlannedRun, record: ScenarioRecord) -> list[AgentFailure]:
    """Runs one repetition of one point in the simulator into `run.run_dir`; returns the
    simulator's failure, if it failed."""
    problems = refusals(run.resolved)
    if problems:
        raise ValueError("; ".join(f"{path}: {why}" for path, why in problems))
    run_dir = run.run_dir
    if run_dir.exists():
        shutil.rmtree(run_dir)
    raw = run_dir / "raw"
    raw.mkdir(parents=True)
    write_json(run_dir / SCENARIO, record.dump())
    config = raw / "sim-config.json"
    config.write_text(json.dumps(sim_config(run, raw), indent=1))
    res = subprocess.run([str(binary("tlab-sim")), str(config)], capture_output=True, text=True, timeout=SIM_TIMEOUT_S)
    (raw / "sim.stderr").write_text(res.stderr)
    if res.returncode != 0:
        message = " ".join(res.stderr.strip().splitlines()[-3:]) or "(no message)"
        return [AgentFailure("tlab-sim", "-", "simulator", res.returncode, message)]
    (raw / "sim.json").write_text(res.stdout)
    return []
