"""One end of an HTTP flow over kernel TCP (`python -m transportlab.stacks web-server |
web-client`, docs/stacks.md): nginx or Hypercorn serving, curl fetching, each a real
process; this end starts it, waits for it and writes the agent's summary."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from transportlab.stacks import process, web

CURL_TIMED_OUT = 28  # curl's exit status when --max-time ended the transfer


def listener(port: int, cc: str, mss: int | None) -> socket.socket:
    """The server's listening socket, made here with the flow's congestion control: nginx
    and Hypercorn cannot choose one, the sockets they accept inherit the listener's, and
    a namespace's default may only be one the host allows. Handed to the server as an
    inherited descriptor (nginx's NGINX variable, Hypercorn's fd:// bind)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, cc.encode())
    if mss:  # inherited by the accepted connections: the download's segments (S1's MSS clamp)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, mss)
    s.bind(("0.0.0.0", port))
    s.listen(128)
    s.set_inheritable(True)
    return s


def wait_ready(proc: subprocess.Popen, err_path: Path, line: str, stopper: process.Stopper) -> bool:
    """Waits until the server says it serves (`line` in its stderr)."""
    deadline = time.monotonic() + process.READY_TIMEOUT_S
    while line not in err_path.read_text(errors="replace"):
        if proc.poll() is not None or time.monotonic() > deadline or stopper.requested:
            return False
        time.sleep(0.01)
    return True


def serve(args, work: Path) -> int:
    stopper = process.Stopper()
    host, port = args.bind.rsplit(":", 1)
    from transportlab.stacks.tls import self_signed

    cert, key = self_signed(work)
    (work / "www").mkdir()
    for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"):
        (work / "tmp" / k).mkdir(parents=True)
    # The content: a sparse file of zeros (nginx serves files; Hypercorn's app makes it).
    with open(work / "www" / str(args.bytes or process.BULK_BYTES), "wb") as f:
        f.truncate(args.bytes or process.BULK_BYTES)
    try:
        sock = listener(int(port), args.cc, args.mss)
    except OSError as e:
        print(f"error: cannot listen on port {port} with TCP {args.cc}: {e.strerror}", file=sys.stderr)
        return 1
    argv, env = web.server_argv(args.http_server, args.application, work, sock.fileno(), int(port), cert, key)
    err_path = work / "stderr"
    start_ns = time.monotonic_ns()
    cpu_start = process.stack_cpu()
    with open(err_path, "wb") as err:
        proc = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=err, cwd=work, env={**os.environ, **env}, pass_fds=(sock.fileno(),)
        )
    sock.close()
    if not wait_ready(proc, err_path, web.READY_LINE[args.http_server], stopper):
        return process.did_not_start(proc, args.http_server, err_path)
    crashed = process.run_server(proc, port, args.duration, stopper)
    cpu = process.stack_cpu(cpu_start)
    error = f"{args.http_server} exited {proc.returncode}: {process.tail(err_path)}" if crashed else None
    process.write_summary(
        args.summary,
        {
            "subcommand": "web-server",
            "implementation": args.http_server,
            "params": {"bind": args.bind, "application": args.application, "cc": args.cc, "argv": argv},
            "start_ns": start_ns,
            "end_ns": time.monotonic_ns(),
            "stopped_by": "signal" if stopper.requested else ("error" if crashed else "duration"),
            "results": {"port": int(port), "cc": args.cc, "http_server": args.http_server, "error": error, **cpu},
        },
    )
    return process.exit_status(error)


def fetch(args, work: Path) -> int:
    stopper = process.Stopper()
    bulk = args.bytes is None
    n = process.BULK_BYTES if bulk else args.bytes
    argv = web.client_argv(args.application, args.connect, n, args.duration, args.objects)
    err_path = work / "stderr"
    spawn_ns = time.monotonic_ns()
    cpu_start = process.stack_cpu()
    with open(err_path, "wb") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err)
    ended_by = process.wait_client(proc, args.give_up, None, stopper)
    exit_ns = time.monotonic_ns()
    cpu = process.stack_cpu(cpu_start)
    out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
    transfers = []
    for line in out.splitlines():
        with contextlib.suppress(ValueError):
            transfers.append(json.loads(line))
    curl = transfers[0] if transfers else {}
    timed_out = proc.returncode == CURL_TIMED_OUT
    if bulk and timed_out and ended_by is None:
        ended_by = "duration"
    error = None
    if ended_by == "stalled":
        error = (
            f"curl hung (no CPU and no I/O for {process.STALL_S:g} s at {args.give_up:g} s): {process.tail(err_path)}"
        )
    elif ended_by is None and proc.returncode != 0:
        error = f"curl exited {proc.returncode}: {process.tail(err_path)}"
    moved = sum(int(t.get("size_download") or 0) for t in transfers)
    statuses = sorted({t.get("response_code") for t in transfers}, key=str)
    status = statuses[0] if len(statuses) == 1 else statuses
    want = None if bulk else args.bytes * args.objects
    if error is None and want is not None and ended_by is None and (moved != want or status != 200):
        error = f"curl moved {moved} of {want} bytes (HTTP status {status})"
    # curl's own clocks: its transfers ran one after another and the last ended as curl
    # exited, so the first began their summed time_total before.
    total_s = sum(float(t.get("time_total") or 0) for t in transfers)
    start = exit_ns - int(total_s * 1e9) if total_s else spawn_ns
    span_s = (exit_ns - start) / 1e9
    complete = error is None and ended_by is None and not bulk
    results = {
        "mode": "objects" if args.objects > 1 else "download",
        "workload": "bulk" if bulk else "download",
        "objects": args.objects,
        "objects_completed": sum(1 for t in transfers if t.get("response_code") == 200 and t.get("exitcode") == 0),
        "application": args.application,
        "http_server": args.http_server,
        "http_version": curl.get("http_version"),
        "http_status": status,
        "implementation": "curl",
        "sender": "server",
        "remote": args.connect,
        "complete": complete,
        "error": error,
        "bytes": moved,
        "bytes_received": moved,
        "ended_by": ended_by or "bytes",
        "connect_start_ns": start,
        "connected_ns": start + int(curl["time_connect"] * 1e9) if curl.get("time_connect") else None,
        "first_byte_ns": start + int(curl["time_starttransfer"] * 1e9) if curl.get("time_starttransfer") else None,
        "end_ns": exit_ns,
        "duration_s": span_s,
        "completion_s": span_s if complete else None,
        "goodput_bps": moved * 8 / span_s if span_s > 0 and error is None else None,
        "throughput_bps": moved * 8 / span_s if span_s > 0 else None,
        **cpu,
    }
    process.write_summary(
        args.summary,
        {
            "subcommand": "web-client",
            "implementation": "curl",
            "params": {"connect": args.connect, "application": args.application, "argv": argv},
            "start_ns": spawn_ns,
            "end_ns": time.monotonic_ns(),
            "stopped_by": ended_by or "bytes",
            "results": results,
        },
    )
    return process.exit_status(error)
