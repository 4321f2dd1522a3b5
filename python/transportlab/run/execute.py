"""Executes one planned run: builds the network, starts servers before time 0 and
clients on schedule, waits for the scenario's end (or for its flows to finish), and tears
down. Writes the raw artefacts only; what they mean is the metrics stage's business.

A run whose agents fail does not raise: the failure is returned (and written to
`raw/failures.json` by the caller) with each agent's own message, so a sweep goes on."""

from __future__ import annotations

import shutil
import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from transportlab.artefacts.records import ScenarioRecord
from transportlab.artefacts.rundir import SCENARIO, write_json
from transportlab.kinds import kind
from transportlab.network.live import Network, NetworkError
from transportlab.plan.flows import Flow
from transportlab.plan.runs import PlannedRun
from transportlab.plan.schedule import CLIENT_GRACE_S, Job, flow_jobs, probe_jobs
from transportlab.plan.topology import Topology

# The longest a run ending with its flows waits for their last packets (an unlimited
# queue has no bound of its own).
DRAIN_CAP_S = 5.0


@dataclass(frozen=True)
class AgentFailure:
    """An agent that exited with an error: which job, where, its exit status and the
    last lines it wrote to stderr."""

    name: str
    host: str
    role: str  # "client" or "server"
    exit_status: int
    message: str

    def line(self) -> str:
        return f"{self.name} ({self.role} on {self.host}) exited {self.exit_status}: {self.message}"


def execute(
    run: PlannedRun, run_id: str, record: ScenarioRecord, on_progress: Callable[[float], None] | None = None
) -> list[AgentFailure]:
    """Runs one repetition of one point into `run.run_dir` (raw/ and scenario.json);
    returns the agents that failed (empty: the run went as planned)."""
    r = run.resolved
    run_dir = run.run_dir
    if run_dir.exists():  # an unfinished or failed attempt: start it again from scratch
        shutil.rmtree(run_dir)
    raw = run_dir / "raw"
    raw.mkdir(parents=True)
    write_json(run_dir / SCENARIO, record.dump())

    capture = (r.capture.snaplen, r.capture.directions) if r.capture else None
    with Network(r.topology, raw, seed=run.seed, run_id=run_id, sysctls=r.sysctls, capture=capture) as net:
        # The lab's BPF congestion controls are registered before any agent starts; a
        # flow's agents select its instance by kernel name.
        jobs: list[Job] = []
        for f in r.flows:
            f = _with_kernel_cc(net, f)
            jobs += flow_jobs(f, r.topology.address(f.to), raw, r.duration)
        for p in r.probes:
            jobs += probe_jobs(p, r.topology.address(p.to), raw, r.duration)
        servers: list[tuple[Job, subprocess.Popen]] = []
        for job in (j for j in jobs if j.server):
            try:
                servers.append((job, net.start_server(job.host, job.argv, _stderr_path(raw, job))))
            except NetworkError:
                # A server that cannot start (a third-party stack not installed, a port
                # taken) fails the run with its own message; teardown as always.
                (raw / "t0_ns").write_text(str(time.monotonic_ns()))
                (raw / "t_end_ns").write_text(str(time.monotonic_ns()))
                return [AgentFailure(job.name, job.host, "server", 1, _last_lines(_stderr_path(raw, job)))]
        t0 = time.monotonic_ns()
        net.set_t0(t0)
        clients: list[tuple[Job, subprocess.Popen]] = []
        for job in sorted((j for j in jobs if not j.server), key=lambda j: j.start):
            _sleep_until(t0 + int(job.start * 1e9))
            with open(_stderr_path(raw, job), "wb") as err:
                clients.append((job, net.popen(job.host, job.argv, stdout=subprocess.DEVNULL, stderr=err)))
        deadline = t0 + int((r.duration + CLIENT_GRACE_S) * 1e9)
        flow_names = {f.name for f in r.flows}
        flow_clients = [p for j, p in clients if j.name in flow_names]
        drain_ns = int(min(_drain_s(r.topology, r.flows), DRAIN_CAP_S) * 1e9)
        while time.monotonic_ns() < deadline:
            if r.stop_when == "flows-done" and flow_clients and all(p.poll() is not None for p in flow_clients):
                # What the last senders sent is still on its way to the receivers.
                _sleep_until(min(deadline, time.monotonic_ns() + drain_ns))
                break
            if all(p.poll() is not None for _, p in clients):
                # Time 0 plus the duration is the end of the scenario even if every
                # client finished early: flows of other runs must not be compared over
                # different spans.
                _sleep_until(min(deadline, t0 + int(r.duration * 1e9)))
                break
            if on_progress:
                on_progress(min(1.0, (time.monotonic_ns() - t0) / 1e9 / r.duration))
            time.sleep(0.1)
        t_end = time.monotonic_ns()
        # Servers that already exited with an error failed on their own (a client the
        # runner stops at teardown is not a failure; a server is stopped the same way).
        ended = [(j, p) for j, p in clients + servers if p.poll() is not None and p.returncode not in (0, None)]
        failures = [
            AgentFailure(
                j.name, j.host, "server" if j.server else "client", p.returncode, _last_lines(_stderr_path(raw, j))
            )
            for j, p in ended
        ]
    (raw / "t0_ns").write_text(str(t0))
    (raw / "t_end_ns").write_text(str(t_end))
    return failures


def _drain_s(topology: Topology, flows: Iterable[Flow]) -> float:
    """How long after its flows' clients have exited a run must still go on for their
    data to arrive: the longest way a packet of a flow whose client is its sender can
    take (0 when every flow is delivered when its client exits)."""
    bounds = [
        topology.delivery_bound_s(f.from_, f.to) for f in flows if not kind(f.protocol).delivered_when_client_exits
    ]
    return max(bounds, default=0.0)


def _with_kernel_cc(net: Network, flow: Flow) -> Flow:
    """The flow with its congestion control's kernel name, registering the lab's BPF
    program for it first when its kind asks for one."""
    need = kind(flow.protocol).bpf_congestion(flow)
    if need is None:
        return flow
    return replace(flow, cc=net.load_kernel_cc(*need), cc_params={})


def _stderr_path(raw: Path, job: Job) -> Path:
    return raw / (f"{job.name}-{job.host}-server.stderr" if job.server else f"{job.name}-client.stderr")


def _last_lines(path: Path, n: int = 3) -> str:
    """The agent's own error ("error: …" and what it says right after it), else its last
    lines."""
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "(no stderr)"
    starts = [i for i, line in enumerate(lines) if line.lower().startswith("error")]
    if starts:
        tail = lines[starts[-1] :]
        cut = next((i for i, line in enumerate(tail) if line.startswith(("Usage:", "For more information"))), len(tail))
        return " ".join(tail[: max(1, min(cut, n))])
    return " / ".join(lines[-n:]) or "(no message)"


def _sleep_until(t_ns: int) -> None:
    while (left := t_ns - time.monotonic_ns()) > 0:
        time.sleep(min(left / 1e9, 0.1))
