"""What every stack end does with its stack's process: wait until it listens, stop it,
quote the end of its stderr, write the agent's summary, and note a stop signal."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

from transportlab.processes import terminate

# A stack asked to stop gets this long before SIGKILL: less than the runner gives the end
# itself (network.live.STOP_GRACE_S), so the end still keeps the qlogs and writes its summary.
STOP_WAIT_S = 2.0
READY_TIMEOUT_S = 8.0
STDERR_TAIL = 5
# A bulk download's size: more than a run can move (ngtcp2's server is given a larger
# --max-dyn-length; nginx serves a sparse file of it).
BULK_BYTES = 10**11


class Stopper:
    """Notes SIGTERM/SIGINT: the end stops its stack and writes what it has."""

    def __init__(self) -> None:
        self.requested = False
        signal.signal(signal.SIGTERM, self._on)
        signal.signal(signal.SIGINT, self._on)

    def _on(self, signum, frame) -> None:
        self.requested = True


def tail(path: Path) -> str:
    """The last lines of a stack's stderr, on one line."""
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return "(no stderr)"
    return " / ".join(lines[-STDERR_TAIL:]) or "(no stderr)"


def stop(proc: subprocess.Popen) -> None:
    """Ends the stack's process (`processes.terminate`) within the stack end's grace."""
    terminate(proc, STOP_WAIT_S)


def did_not_start(proc: subprocess.Popen, what: str, err_path: Path) -> int:
    """Stops a server that never became ready and says so with the end of its stderr; the
    end's exit status."""
    stop(proc)
    print(f"error: {what} did not start (exit {proc.returncode}): {tail(err_path)}", file=sys.stderr)
    return 1


def bound(port: int, pid: int, proto: str) -> bool:
    """Whether a socket of this namespace (`proto` "udp", or "tcp" listening) is bound to
    `port`: /proc/<pid>/net is the stack's namespace, which is ours."""
    for table in (proto, proto + "6"):
        try:
            text = Path(f"/proc/{pid}/net/{table}").read_text()
        except OSError:
            continue
        for line in text.splitlines()[1:]:
            cols = line.split()
            # tcp: state 0A is LISTEN
            if int(cols[1].rsplit(":", 1)[1], 16) == port and (proto == "udp" or cols[3] == "0A"):
                return True
    return False


def udp_bound(port: int, pid: int) -> bool:
    return bound(port, pid, "udp")


def wait_listening(proc: subprocess.Popen, port: int, proto: str, stopper: Stopper) -> bool:
    """Waits until the stack listens on `port`; False if it exited, took too long or the
    end was asked to stop."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not bound(port, proc.pid, proto):
        if proc.poll() is not None or time.monotonic() > deadline or stopper.requested:
            return False
        time.sleep(0.01)
    return True


# A client stack whose process has neither used CPU nor read or written anything for
# this long when its time is up has hung (a slow one is stopped as the runner stops any
# client).
STALL_S = 2.0


def activity(pid: int) -> tuple[int, int] | None:
    """What a working process changes: its CPU time (clock ticks, /proc/<pid>/stat) and
    the bytes it has read and written through files and pipes (/proc/<pid>/io; socket
    messages are not counted there, hence the CPU time)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        fields = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    except (OSError, ValueError, IndexError):
        return None
    # stat fields after "(comm)": state is 0, utime 11, stime 12.
    return int(stat[11]) + int(stat[12]), int(fields["rchar"]) + int(fields["wchar"])


def wait_client(proc: subprocess.Popen, give_up_s: float, until_s: float | None, stopper: Stopper) -> str | None:
    """Waits for a client stack to exit by itself (None) or stops it: "signal" (this end
    was asked to stop), "duration" (`until_s`, a bulk transfer this end times), or, at
    `give_up_s`, "stalled" (no CPU and no I/O for STALL_S: hung, a failure) or
    "stopped" (still working: stopped as the runner stops a slow client, not a
    failure)."""
    start = time.monotonic()
    last_io, last_change = activity(proc.pid), start
    ended_by = None
    while proc.poll() is None:
        now = time.monotonic()
        io = activity(proc.pid)
        if io != last_io:
            last_io, last_change = io, now
        if stopper.requested:
            ended_by = "signal"
        elif until_s is not None and now - start >= until_s:
            ended_by = "duration"
        elif now - start >= give_up_s:
            ended_by = "stalled" if now - last_change >= STALL_S else "stopped"
        if ended_by:
            stop(proc)
            break
        time.sleep(0.005)
    return ended_by


def run_server(proc: subprocess.Popen, port: int | str, duration_s: float, stopper: Stopper) -> bool:
    """A started server: says READY (the runner starts the client then), lets it run
    until it exits, this end is asked to stop, or `duration_s` (0: no limit) is over,
    stops it, and returns whether it crashed (exited by itself)."""
    print(f"READY {port}", flush=True)
    until = time.monotonic() + duration_s if duration_s else float("inf")
    while proc.poll() is None and not stopper.requested and time.monotonic() < until:
        time.sleep(0.05)
    crashed = proc.poll() is not None
    stop(proc)
    return crashed


def exit_status(error: str | None) -> int:
    """An end's exit status: 1 with the error on stderr, else 0."""
    if error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def stack_cpu(before: dict[str, float] | None = None) -> dict[str, float]:
    """User and system CPU seconds of this end's children that have exited and been waited
    for (getrusage, which takes in what they waited for: nginx's workers), under the
    agent's names (`cpu_user_s`, `cpu_sys_s`); less `before` (taken as the stack started,
    so that helpers run earlier — a certificate's generation — do not count)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    now = {"cpu_user_s": ru.ru_utime, "cpu_sys_s": ru.ru_stime}
    return {k: v - (before or {}).get(k, 0.0) for k, v in now.items()}


def write_summary(path: Path, summary: dict) -> None:
    """Atomically, as the agent writes its summary."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(summary, indent=2) + "\n")
    os.replace(tmp, path)
