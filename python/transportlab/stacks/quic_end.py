"""One end of a QUIC flow run by a third-party stack (`python -m transportlab.stacks
quic-server|quic-client`, docs/stacks.md). It starts the stack's own process, waits for
it, writes the agent's summary and moves the stack's qlog into the run with the sidecar
its series are made from at analysis, so the metrics treat the flow as quinn's. It does
little after the stack stops: the runner gives a stopped end 3 s before SIGKILL."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

from transportlab.artefacts import qlog as Q
from transportlab.stacks import process
from transportlab.stacks.quic import Stack, _Ngtcp2, version


class FileClock:
    """When each qlog file first appears in a folder (CLOCK_MONOTONIC ns): ngtcp2's qlog has
    no reference time, and it opens the file when it creates the connection."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.seen: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.is_set():
            try:
                for name in os.listdir(self.folder):
                    self.seen.setdefault(name, time.monotonic_ns())
            except OSError:
                pass
            time.sleep(0.001)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _ngtcp2_datagram(size: int | None) -> list[str]:
    return [f"--max-udp-payload-size={size}", "--no-pmtud"] if size else []


def _datagram(size: int | None) -> list[str]:
    return ["--datagram-size", str(size)] if size else []


def server_argv(args, stack: Stack, host: str, port: int, cert: Path, key: Path, qdir: Path) -> list[str]:
    own = stack.controllers[args.cc]
    if isinstance(stack, _Ngtcp2):
        addr = "*" if host == "0.0.0.0" else host
        return [
            _Ngtcp2.program("server", stack.install),
            "-q",
            f"--qlog-dir={qdir}",
            f"--cc={own}",
            "--max-dyn-length=100G",
            "--max-window=64M",
            "--max-stream-window=64M",
            *_ngtcp2_datagram(args.datagram_size),
            addr,
            str(port),
            str(key),
            str(cert),
        ]
    argv = stack.executable() + ["server", "--bind", f"{host}:{port}", "--cert", str(cert), "--key", str(key)]
    argv += _datagram(args.datagram_size)
    return argv + _aioquic_args(stack, own, args, qdir)


def _aioquic_args(stack: Stack, own_cc: str, args, qdir: Path) -> list[str]:
    if stack.name != "aioquic":
        return []
    argv = ["--cc", own_cc, "--qlog-dir", str(qdir)] + ([] if args.pacing else ["--no-pacing"])
    return argv + (["--rcvbuf", str(args.rcvbuf)] if args.rcvbuf is not None else [])


def client_argv(stack: Stack, args, url: str, qdir: Path, work: Path) -> list[str]:
    own = stack.controllers[args.cc]
    if isinstance(stack, _Ngtcp2):
        host, port = args.connect.rsplit(":", 1)
        argv = [
            _Ngtcp2.program("client", stack.install),
            "-q",
            "--exit-on-all-streams-close",
            f"--download={work / 'download'}",
            f"--qlog-file={qdir / 'client.sqlog'}",
            f"--cc={own}",
            "--max-window=64M",
            "--max-stream-window=64M",
            *_ngtcp2_datagram(args.datagram_size),
        ]
        if args.direction == "upload":
            body = work / "upload.bin"
            with open(body, "wb") as f:
                f.truncate(args.bytes)
            argv.append(f"--data={body}")
        return argv + [host, port, url]
    argv = stack.executable() + ["client", "--url", url] + _datagram(args.datagram_size)
    if args.direction == "upload":
        argv += ["--upload", str(args.bytes if args.bytes is not None else process.BULK_BYTES)]
    if args.duration:
        argv += ["--duration", f"{args.duration}s" if stack.name == "quic-go" else str(args.duration)]
    return argv + _aioquic_args(stack, own, args, qdir)


def stack_env(stack: Stack, qdir: Path) -> dict[str, str]:
    env = dict(os.environ)
    if stack.name == "quic-go":
        env["QLOGDIR"] = str(qdir)  # quic-go's own tracer (qlog.DefaultConnectionTracer)
    return env


def keep_qlogs(stack: Stack, qdir: Path, file_clock: FileClock | None, offset_ns: int, dest: Path | None) -> list[Path]:
    """Moves each qlog in `qdir` (oldest first) into the run: the first at `dest`,
    connection n > 0 beside it with `-n` before its extension (as the agent names them),
    each with the sidecar the series are made from at analysis (artefacts.qlog)."""
    if dest is None:
        return []
    files = sorted(qdir.iterdir(), key=lambda p: (file_clock.seen.get(p.name, 0) if file_clock else 0, p.name))
    kept = []
    for n, path in enumerate(files):
        if stack.qlog_clock == "file":
            seen = file_clock.seen.get(path.name) if file_clock else None
            if seen is None:
                continue  # never seen appearing: no time origin for it
            clock = Q.QlogClock(monotonic_ns=seen)
        else:
            clock = Q.QlogClock(epoch_minus_monotonic_ns=offset_ns, absolute_epoch_times=stack.qlog_clock == "absolute")
        target = dest if n == 0 else dest.with_name(f"{dest.stem}-{n}{dest.suffix}")
        shutil.move(str(path), target)
        Q.write_clock(target, clock, stack.silent)
        kept.append(target)
    return kept


class Launched:
    """A stack's process, started with its stderr in `err_path`, its qlog clock and its
    CPU account running; `finish` stops the clock and moves the qlogs into the run."""

    def __init__(self, stack: Stack, argv: list[str], work: Path, qdir: Path, err_path: Path, stdout: int) -> None:
        self.stack, self.qdir = stack, qdir
        self.clock = FileClock(qdir) if stack.qlog_clock == "file" else None
        self.offset_ns = time.time_ns() - time.monotonic_ns()
        self.start_ns = time.monotonic_ns()
        self.cpu_start = process.stack_cpu()
        with open(err_path, "wb") as err:
            self.proc = subprocess.Popen(argv, stdout=stdout, stderr=err, cwd=work, env=stack_env(stack, qdir))

    def cpu(self) -> dict[str, float]:
        return process.stack_cpu(self.cpu_start)

    def finish(self, dest: Path | None) -> list[Path]:
        if self.clock:
            self.clock.stop()
        return keep_qlogs(self.stack, self.qdir, self.clock, self.offset_ns, dest)


def serve(args, stack: Stack, work: Path) -> int:
    stopper = process.Stopper()
    host, port = args.bind.rsplit(":", 1)
    from transportlab.stacks.tls import self_signed

    cert, key = self_signed(work)
    qdir = work / "qlog"
    qdir.mkdir()
    err_path = work / "stderr"
    argv = server_argv(args, stack, host, int(port), cert, key, qdir)
    launched = Launched(stack, argv, work, qdir, err_path, subprocess.DEVNULL)
    proc = launched.proc
    if not process.wait_listening(proc, int(port), "udp", stopper):
        return process.did_not_start(proc, f"{stack.name} server", err_path)
    crashed = process.run_server(proc, port, args.duration, stopper)
    cpu = launched.cpu()
    error = f"{stack.name} server exited {proc.returncode}: {process.tail(err_path)}" if crashed else None
    kept = launched.finish(args.qlog)
    connections = [{"conn": n, "qlog": str(path)} for n, path in enumerate(kept)]
    summary = {
        "subcommand": "quic-stack-server",
        "implementation": stack.name,
        "implementation_version": version(stack.name),
        "params": {"bind": args.bind, "cc": args.cc, "stack_cc": stack.controllers[args.cc], "argv": argv},
        "start_ns": launched.start_ns,
        "end_ns": time.monotonic_ns(),
        "stopped_by": "signal" if stopper.requested else ("error" if crashed else "duration"),
        "results": {
            "port": int(port),
            "cc": args.cc,
            "implementation": stack.name,
            "error": error,
            "connections": connections,
            **cpu,
        },
    }
    process.write_summary(args.summary, summary)
    return process.exit_status(error)


def fetch(args, stack: Stack, work: Path) -> int:
    stopper = process.Stopper()
    qdir = work / "qlog"
    qdir.mkdir()
    (work / "download").mkdir()
    err_path = work / "stderr"
    # Bulk: a GET of more than the link can carry in the time, stopped by the client.
    n = args.bytes if args.bytes is not None else process.BULK_BYTES
    url = f"https://{args.connect}/{n if args.direction == 'download' else 0}"
    argv = client_argv(stack, args, url, qdir, work)
    launched = Launched(stack, argv, work, qdir, err_path, subprocess.PIPE)
    proc, spawn_ns = launched.proc, launched.start_ns
    # ngtcp2's client has no duration: the bulk transfer ends when this end stops it.
    own_timer = isinstance(stack, _Ngtcp2) and args.duration
    ended_by = process.wait_client(proc, args.give_up, args.duration if own_timer else None, stopper)
    exit_ns = time.monotonic_ns()
    cpu = launched.cpu()
    out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
    reported: dict = {}
    for line in out.splitlines():
        if line.startswith("{"):
            with contextlib.suppress(ValueError):  # a line cut short: the stack failed
                reported = json.loads(line)
    error = None
    if ended_by == "stalled":
        error = f"{stack.name} client hung (no CPU and no I/O for {process.STALL_S:g} s at {args.give_up:g} s): {process.tail(err_path)}"
    elif ended_by is None and proc.returncode != 0:
        error = f"{stack.name} client exited {proc.returncode}: {process.tail(err_path)}"
    if isinstance(stack, _Ngtcp2):
        got = work / "download" / str(n)
        moved = (
            (args.bytes if proc.returncode == 0 else 0)
            if args.direction == "upload"
            else (got.stat().st_size if got.exists() else 0)
        )
        reported = {"connect_start_ns": spawn_ns, "end_ns": exit_ns, "bytes": moved, "status": None}
    moved = int(reported.get("bytes") or 0)
    bulk = args.bytes is None
    if error is None and not bulk and ended_by is None and moved != args.bytes:
        error = f"{stack.name} client moved {moved} of {args.bytes} bytes (HTTP status {reported.get('status')})"
    kept = launched.finish(args.qlog)
    start = reported.get("connect_start_ns") or spawn_ns
    end = reported.get("end_ns") or exit_ns
    span_s = (end - start) / 1e9
    complete = error is None and ended_by is None and not bulk
    sender = "server" if args.direction == "download" else "client"
    results = {
        "mode": args.direction,
        "workload": "bulk" if bulk else args.direction,
        "application": "http3",
        "implementation": stack.name,
        "implementation_version": version(stack.name),
        "sender": sender,
        "remote": args.connect,
        "cc": args.cc,
        "complete": complete,
        "error": error,
        "bytes": moved,
        "bytes_sent": moved if sender == "client" else 0,
        "bytes_received": moved if sender == "server" else 0,
        "http_status": reported.get("status"),
        "ended_by": ended_by or reported.get("ended_by") or "bytes",
        "connect_start_ns": start,
        "first_byte_ns": reported.get("first_byte_ns"),
        "end_ns": end,
        "duration_s": span_s,
        "completion_s": span_s if complete else None,
        "goodput_bps": moved * 8 / span_s if span_s > 0 and error is None else None,
        "throughput_bps": moved * 8 / span_s if span_s > 0 else None,
        # The connection's counters are in its series, made from the qlog at analysis.
        "qlog": str(kept[0]) if kept else None,
        **cpu,
    }
    summary = {
        "subcommand": "quic-stack-client",
        "implementation": stack.name,
        "params": {"connect": args.connect, "cc": args.cc, "stack_cc": stack.controllers[args.cc], "argv": argv},
        "start_ns": spawn_ns,
        "end_ns": time.monotonic_ns(),
        "stopped_by": ended_by or "bytes",
        "results": results,
    }
    process.write_summary(args.summary, summary)
    return process.exit_status(error)
