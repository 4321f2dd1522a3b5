"""A record per live run of what it created (namespaces, TUN and veth devices, processes,
kernel congestion controls it registered), so a
run killed before it could tear down can be cleaned up later by `tlab clean`, which
removes exactly what was recorded and nothing else."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from transportlab.locations import RUN_REGISTRY


def process_start_time(pid: int) -> int | None:
    """The kernel's start time of `pid` (clock ticks since boot), which tells a process
    from a later one that reused its PID; None if no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name (field 2) may contain spaces and parentheses: split after it.
    return int(stat[stat.rindex(")") + 2 :].split()[19])


@dataclass
class ProcessRecord:
    pid: int
    start_time: int
    argv0: str


@dataclass
class RunRecord:
    run_id: str
    owner: ProcessRecord
    namespaces: list[str] = field(default_factory=list)
    tun_devices: list[str] = field(default_factory=list)
    # Both ends of every veth pair (removed with their namespaces; listed for a run
    # killed before it moved them out of the root namespace).
    veth_devices: list[str] = field(default_factory=list)
    processes: list[ProcessRecord] = field(default_factory=list)
    # Kernel names of the lab's BPF congestion controls the run registered (kernel_cc.py),
    # recorded before each is loaded.
    kernel_ccs: list[str] = field(default_factory=list)

    @property
    def path(self) -> Path:
        return RUN_REGISTRY / f"{self.run_id}.json"

    def save(self) -> None:
        RUN_REGISTRY.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1))
        os.replace(tmp, self.path)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)

    def add_process(self, pid: int, argv0: str) -> None:
        start = process_start_time(pid)
        if start is not None:
            self.processes.append(ProcessRecord(pid, start, argv0))
            self.save()

    @staticmethod
    def load(path: Path) -> RunRecord:
        data = json.loads(path.read_text())
        return RunRecord(
            run_id=data["run_id"],
            owner=ProcessRecord(**data["owner"]),
            namespaces=list(data["namespaces"]),
            tun_devices=list(data["tun_devices"]),
            veth_devices=list(data.get("veth_devices", [])),
            processes=[ProcessRecord(**p) for p in data["processes"]],
            kernel_ccs=list(data.get("kernel_ccs", [])),
        )


def is_alive(p: ProcessRecord) -> bool:
    return process_start_time(p.pid) == p.start_time


def new_record(run_id: str) -> RunRecord:
    me = os.getpid()
    return RunRecord(run_id, ProcessRecord(me, process_start_time(me) or 0, "tlab"))


def all_records() -> list[tuple[Path, RunRecord | None]]:
    if not RUN_REGISTRY.is_dir():
        return []
    out: list[tuple[Path, RunRecord | None]] = []
    for path in sorted(RUN_REGISTRY.glob("*.json")):
        try:
            out.append((path, RunRecord.load(path)))
        except (OSError, ValueError, KeyError, TypeError):
            out.append((path, None))
    return out
