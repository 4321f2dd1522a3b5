"""`python -m transportlab.stacks quic-server|quic-client|web-server|web-client …`: one
end of a flow run by a third-party stack (docs/stacks.md). Each starts the stack's own
process, waits for it and writes the agent's summary (and, for QUIC, the series from the
stack's qlog), so the runner and the metrics treat the flow as the agent's.

Exit status as the agent's: 0 success (also when stopped by a signal), 1 the stack failed
or is missing (`error: …` on stderr, with the stack's own last lines), 2 bad arguments."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from transportlab.stacks import web
from transportlab.stacks.quic import STACKS, StackMissing, _Ngtcp2


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m transportlab.stacks", description=__doc__)
    sub = ap.add_subparsers(dest="end", required=True)
    for end in ("quic-server", "quic-client", "web-server", "web-client"):
        p = sub.add_parser(end)
        if end.startswith("quic"):
            p.add_argument("--implementation", choices=list(STACKS), required=True)
            p.add_argument("--qlog", type=Path, help="where the connection's qlog goes")
            p.add_argument("--datagram-size", type=int, help="UDP payload size (the flow's mss)")
            p.add_argument("--no-pacing", dest="pacing", action="store_false", help="the stack's pacer off")
            p.add_argument("--rcvbuf", type=int, help="bytes asked for the UDP receive buffer (the kernel doubles it)")
        else:
            p.add_argument("--application", choices=web.APPLICATIONS, required=True)
            p.add_argument("--http-server", choices=web.SERVERS, default=web.DEFAULT_SERVER)
            p.add_argument("--mss", type=int, help="TCP_MAXSEG of the server's listening socket")
            p.add_argument("--objects", type=int, default=1, help="client: fetch this many objects of --bytes")
        p.add_argument("--cc", required=True, help="the lab's controller name")
        p.add_argument("--summary", type=Path, required=True)
        p.add_argument("--duration", type=float, help="seconds: server: serve at most; client: bulk")
        p.add_argument("--bytes", type=int, help="download (or quic: upload) this many bytes; none: bulk")
        if end.endswith("server"):
            p.add_argument("--bind", required=True, help="ADDR:PORT")
        else:
            p.add_argument("--connect", required=True, help="ADDR:PORT")
            p.add_argument("--give-up", type=float, required=True, help="seconds: a stack still running fails")
            if end == "quic-client":
                p.add_argument("--direction", choices=("download", "upload"), default="download")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    prog = f"stacks {args.end}"
    client = args.end.endswith("client")
    if client and (args.bytes is None) == (args.duration is None):
        print(f"{prog}: error: give exactly one of --bytes and --duration", file=sys.stderr)
        return 2
    if args.end.startswith("quic"):
        stack = STACKS[args.implementation]
        if args.cc not in stack.controllers:
            print(f"{prog}: error: {stack.name} offers {', '.join(stack.controllers)} (not {args.cc})", file=sys.stderr)
            return 2
        if client and args.bytes is None and args.direction == "upload" and not stack.bulk_upload:
            print(f"{prog}: error: {stack.name} uploads a file: give --bytes", file=sys.stderr)
            return 2
        if not args.pacing and not stack.pacer_switch:
            print(f"{prog}: error: {stack.name}'s pacer cannot be switched off", file=sys.stderr)
            return 2
        if args.rcvbuf is not None and not stack.rcvbuf_switch:
            print(f"{prog}: error: {stack.name}'s socket buffer cannot be set", file=sys.stderr)
            return 2
        name = stack.name
    else:
        name = args.http_server if not client else "curl"
    try:
        if args.end.startswith("quic"):
            end = "server" if not client else "client"
            stack.executable() if not isinstance(stack, _Ngtcp2) else _Ngtcp2.program(end, stack.install)
        elif client:
            web.curl_program()
        elif args.http_server == "nginx":
            web.nginx_program()
        else:
            web.hypercorn_argv()
    except StackMissing as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix=f"tlab-{name}-"))
    work.chmod(0o755)
    # Each end imports only what it runs: a client starts on schedule, so its start-up
    # (pandas for the qlog, cryptography for a server's certificate) is kept off it.
    try:
        if args.end.startswith("quic"):
            from transportlab.stacks import quic_end
        else:
            from transportlab.stacks import web_end
        if args.end == "quic-server":
            return quic_end.serve(args, stack, work)
        if args.end == "quic-client":
            return quic_end.fetch(args, stack, work)
        if args.end == "web-server":
            return web_end.serve(args, work)
        return web_end.fetch(args, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
