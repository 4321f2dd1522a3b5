"""`python -m transportlab.utp_agent server|client …`: one end of a uTP flow (docs/agent.md,
"uTP"). Exit status as the Rust agent's: 0 success (also when stopped by a signal), 1 the
transfer failed (the summary says why), 2 bad arguments."""

from __future__ import annotations

import argparse
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

from transportlab.utp_agent.content import Content
from transportlab.utp_agent.output import write_series, write_summary
from transportlab.utp_agent.parameters import LIBTORRENT_PARAMETERS
from transportlab.utp_agent.results import summary
from transportlab.utp_agent.transfer import Job, TransferError, run

UNITS_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


def duration_ns(text: str) -> int:
    for unit in sorted(UNITS_NS, key=len, reverse=True):
        if text.endswith(unit):
            try:
                value = float(text[: -len(unit)])
            except ValueError:
                break
            if value < 0:
                break
            return int(round(value * UNITS_NS[unit]))
    raise argparse.ArgumentTypeError(f"expected a duration like 10ms or 1500000ns (got {text!r})")


def setting(text: str) -> tuple[str, int]:
    key, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE (got {text!r})")
    p = LIBTORRENT_PARAMETERS.get(key)
    if p is None:
        raise argparse.ArgumentTypeError(
            f"cc_params.{key}: not a libtorrent uTP parameter ({', '.join(LIBTORRENT_PARAMETERS)})"
        )
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"cc_params.{key}: expected a whole number (got {value!r})") from None
    if not p.min <= number <= p.max:
        raise argparse.ArgumentTypeError(f"cc_params.{key}: {p.min} to {p.max} {p.unit} (got {number})")
    return key, number


def address(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(f"expected ADDR:PORT (got {text!r})")
    return host, int(port)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m transportlab.utp_agent", description=__doc__)
    sub = ap.add_subparsers(dest="end", required=True)
    for end in ("server", "client"):
        p = sub.add_parser(end)
        if end == "server":
            p.add_argument("--bind", type=address, required=True, help="ADDR:PORT to listen on (UDP, uTP)")
            p.add_argument("--duration", type=duration_ns, help="serve at most this long")
        else:
            p.add_argument("--connect", type=address, required=True, help="the server's ADDR:PORT")
            p.add_argument("--duration", type=duration_ns, help="bulk: transfer this long from connecting")
            p.add_argument("--connect-timeout", type=duration_ns, default=duration_ns("10s"))
        # libutp runs in the `agent` binary (utp-server / utp-client), not here.
        p.add_argument("--implementation", choices=["libtorrent"], required=True)
        p.add_argument("--role", choices=["sender", "receiver"], required=True, help="which end sends the payload")
        p.add_argument("--bytes", type=int, required=True, help="content size (bulk: its upper bound)")
        p.add_argument("--content-seed", type=int, help="download content: the seed of its bytes (bulk: omit)")
        p.add_argument("--cc-param", type=setting, action="append", default=[], metavar="KEY=VALUE")
        p.add_argument("--sample-interval", type=duration_ns, default=duration_ns("10ms"))
        p.add_argument("--summary", type=Path, required=True)
        p.add_argument("--series", type=Path)
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    prog = f"utp-{args.end}"
    if args.bytes <= 0:
        print(f"{prog}: error: --bytes must be positive (got {args.bytes})", file=sys.stderr)
        return 2
    bulk = args.content_seed is None
    if args.end == "client" and bulk and args.duration is None:
        print(f"{prog}: error: a bulk transfer (no --content-seed) needs --duration", file=sys.stderr)
        return 2
    import libtorrent as lt

    stop = {"requested": False}

    def on_signal(signum, frame) -> None:
        stop["requested"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    def ready(port: int) -> None:
        print(f"READY {port}", flush=True)

    job = Job(
        end=args.end,
        role=args.role,
        content=Content(args.bytes, args.content_seed),
        bulk=bulk,
        params=dict(args.cc_param),
        listen="0.0.0.0:0" if args.end == "client" else f"{args.bind[0]}:{args.bind[1]}",
        connect=args.connect if args.end == "client" else None,
        duration_ns=args.duration,
        connect_timeout_ns=getattr(args, "connect_timeout", 0),
        sample_interval_ns=args.sample_interval,
    )
    workdir = Path(tempfile.mkdtemp(prefix="tlab-utp-"))
    try:
        try:
            state = run(lt, job, workdir, lambda: stop["requested"], ready)
        except TransferError as e:  # before the loop: nothing moved, nothing to sample
            print(f"{prog}: error: {e}", file=sys.stderr)
            write_summary(args.summary, summary(prog, lt, args, job, None, time.monotonic_ns(), str(e)))
            return 1
        write_summary(args.summary, summary(prog, lt, args, job, state, time.monotonic_ns(), state.error))
        if args.series is not None:
            write_series(args.series, state.rows)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    if state.error:
        print(f"{prog}: error: {state.error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
