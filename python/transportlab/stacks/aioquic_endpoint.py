"""The lab's HTTP/3 endpoint on aioquic's API (docs/stacks.md): aioquic's own HTTP/3
example client and server ship only in its source distribution, so this small program
does what the lab's flows need, as `tlab-quic-go` does for quic-go:

    python -m transportlab.stacks.aioquic_endpoint server --bind ADDR:PORT --cert F --key F
    python -m transportlab.stacks.aioquic_endpoint client --url https://ADDR:PORT/N
        [--upload N] [--duration SECONDS] [--cc reno|cubic] [--no-pacing] [--rcvbuf BYTES]

The server answers GET /N with N bytes and POST with the count of the body's bytes. Each
end writes each connection's qlog into --qlog-dir as JSON-SEQ while the connection runs
(`StreamedQlog`). The client prints one JSON line: timings in CLOCK_MONOTONIC ns and the
bytes moved."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import signal
import socket
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TextIO
from urllib.parse import urlparse

from aioquic.asyncio import QuicConnectionProtocol, connect, serve
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ProtocolNegotiated
from aioquic.quic.logger import QLOG_VERSION, QuicLogger, QuicLoggerTrace
from aioquic.quic.recovery import QuicPacketPacer

CHUNK = 256 * 1024
# Bytes queued ahead of the network per stream: enough that the sender never waits on
# this loop at the lab's rates, bounded so a bulk transfer does not fill memory.
AHEAD = 4 * 2**20
WINDOW = 64 * 2**20  # flow-control windows as quinn's, so they do not limit a transfer


def configuration(is_client: bool, cc: str, datagram_size: int | None, qlog: QuicLogger | None) -> QuicConfiguration:
    config = QuicConfiguration(
        is_client=is_client,
        alpn_protocols=H3_ALPN,
        congestion_control_algorithm=cc,
        max_data=WINDOW,
        max_stream_data=WINDOW,
        idle_timeout=30.0,
        quic_logger=qlog,
        # The lab's servers use a self-signed certificate made for the run.
        verify_mode=False if is_client else None,
    )
    if datagram_size:
        config.max_datagram_size = datagram_size
    return config


RS = "\x1e"  # JSON-SEQ's record separator
QLOG_FLUSH_S = 0.2
_encode = json.JSONEncoder(separators=(",", ":")).encode


class StreamedQlog(QuicLogger):
    """Each connection's qlog written as JSON-SEQ while the connection runs, as quic-go,
    ngtcp2 and quinn write theirs. aioquic's own QuicLogger keeps every event of every
    connection in memory until the program writes them: after a large transfer that
    took the server seconds once it was asked to stop, longer than the runner waits for
    a stopped end (network.live.STOP_GRACE_S), and the server's qlog was lost.

    `flush` writes the events logged since the last flush; the endpoints call it every
    QLOG_FLUSH_S from the event loop, between packets, because aioquic fills a received
    packet's frame list after it has logged the packet. A connection's end writes the rest
    of its qlog and closes the file; `close` (at stop) does so for those still open."""

    def __init__(self, folder: Path, side: str) -> None:
        super().__init__()
        folder.mkdir(parents=True, exist_ok=True)
        self.folder, self.side = folder, side
        self._files: dict[QuicLoggerTrace, TextIO] = {}
        self._started = 0

    def start_trace(self, is_client: bool, odcid: bytes) -> QuicLoggerTrace:
        trace = super().start_trace(is_client, odcid)
        # Numbered in the order connections start (the stack end keeps them in name order).
        f = open(self.folder / f"{self._started:06d}_{self.side}.sqlog", "w")  # noqa: SIM115 (closed at the trace's end)
        self._started += 1
        head = {k: v for k, v in trace.to_dict().items() if k != "events"}
        f.write(RS + _encode({"qlog_format": "JSON-SEQ", "qlog_version": QLOG_VERSION, "trace": head}) + "\n")
        self._files[trace] = f
        return trace

    def _write(self, trace: QuicLoggerTrace, f: TextIO) -> None:
        events = trace._events  # aioquic 1.7.2's queue of the trace's event dicts
        while events:
            f.write(RS + _encode(events.popleft()) + "\n")
        f.flush()

    def flush(self) -> None:
        for trace, f in self._files.items():
            self._write(trace, f)

    def end_trace(self, trace: QuicLoggerTrace) -> None:
        f = self._files.pop(trace, None)
        if f is None:
            return  # written and closed already (`close`)
        self._write(trace, f)
        f.close()
        self._traces.remove(trace)

    def close(self) -> None:
        for trace in list(self._files):
            self.end_trace(trace)


def open_qlog(folder: Path | None, side: str) -> StreamedQlog | None:
    return StreamedQlog(folder, side) if folder is not None else None


async def _flush_every(qlog: StreamedQlog) -> None:
    while True:
        await asyncio.sleep(QLOG_FLUSH_S)
        qlog.flush()


@contextlib.contextmanager
def streaming(qlog: StreamedQlog | None) -> Iterator[None]:
    """Flushes `qlog` every QLOG_FLUSH_S while the block runs, then writes what is left."""
    if qlog is None:
        yield
        return
    flushing = asyncio.ensure_future(_flush_every(qlog))
    try:
        yield
    finally:
        flushing.cancel()
        qlog.close()


class Unpaced(QuicPacketPacer):
    """A pacer that never holds a packet back: the congestion window alone limits sending
    (S1's pacer-off reruns). aioquic has no setting for it; its connection asks its
    recovery's pacer before each packet (aioquic 1.7.2, `QuicConnection._write_application`)."""

    # aioquic annotates it `float`, yet its own returns None when a packet may go now.
    def next_send_time(self, now: float) -> None:  # type: ignore[override]
        return None


# Linux's SO_RCVBUFFORCE (Python's socket module lacks the name): a receive buffer above
# net.core.rmem_max, which a host's namespace cannot raise; needs CAP_NET_ADMIN.
SO_RCVBUFFORCE = 33


class Endpoint(QuicConnectionProtocol):
    """One connection's HTTP/3: the server's answers, the client's one request."""

    def __init__(self, *args, pacing: bool = True, rcvbuf: int | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.rcvbuf = rcvbuf
        if not pacing:
            self._quic._loss._pacer = Unpaced(max_datagram_size=self._quic._max_datagram_size)
        self.h3: H3Connection = None  # type: ignore[assignment]  # set once ALPN is done
        self.received: dict[int, int] = {}
        self.done: dict[int, asyncio.Future] = {}
        self.first_byte_ns: int | None = None
        self.status: int | None = None
        self.sent: dict[int, int] = {}

    def connection_made(self, transport) -> None:
        # The server's transport is its one listening socket, shared by its connections.
        super().connection_made(transport)
        if self.rcvbuf is not None:
            transport.get_extra_info("socket").setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, self.rcvbuf)

    def quic_event_received(self, event) -> None:
        if isinstance(event, ProtocolNegotiated):
            self.h3 = H3Connection(self._quic)
        if self.h3 is None:
            return
        for ev in self.h3.handle_event(event):
            if isinstance(ev, HeadersReceived):
                headers = dict(ev.headers)
                if b":status" in headers:
                    self.status = int(headers[b":status"])
                else:
                    self.answer(ev.stream_id, headers, ev.stream_ended)
            elif isinstance(ev, DataReceived):
                if self.first_byte_ns is None and ev.data:
                    self.first_byte_ns = time.monotonic_ns()
                self.received[ev.stream_id] = self.received.get(ev.stream_id, 0) + len(ev.data)
                if ev.stream_ended:
                    self.ended(ev.stream_id)
            if (
                getattr(ev, "stream_ended", False)
                and isinstance(ev, HeadersReceived)
                and b":status" in dict(ev.headers)
            ):
                self.ended(ev.stream_id)

    def ended(self, stream_id: int) -> None:
        fut = self.done.get(stream_id)
        if fut is not None and not fut.done():
            fut.set_result(self.received.get(stream_id, 0))

    # --- server ---------------------------------------------------------------------

    def answer(self, stream_id: int, headers: dict, ended: bool) -> None:
        method, path = headers.get(b":method", b""), headers.get(b":path", b"/").decode(errors="replace")
        if method == b"POST":
            fut = self.done.setdefault(stream_id, asyncio.get_running_loop().create_future())
            if ended:
                self.ended(stream_id)
            asyncio.ensure_future(self.reply_count(stream_id, fut))
            return
        try:
            n = int(path.lstrip("/"))
        except ValueError:
            n = -1
        if n < 0:
            self.h3.send_headers(stream_id, [(b":status", b"400")], end_stream=True)
            self.transmit()
            return
        self.h3.send_headers(stream_id, [(b":status", b"200"), (b"content-length", str(n).encode())])
        asyncio.ensure_future(self.send_body(stream_id, n))

    async def reply_count(self, stream_id: int, fut: asyncio.Future) -> None:
        n = await fut
        self.h3.send_headers(stream_id, [(b":status", b"200")])
        self.h3.send_data(stream_id, f"{n}\n".encode(), end_stream=True)
        self.transmit()

    async def send_body(self, stream_id: int, n: int) -> None:
        """N zero bytes, queued a bounded amount ahead of what the peer acknowledged."""
        zeros = bytes(CHUNK)
        left = n
        while left > 0:
            stream = self._quic._streams.get(stream_id)
            if stream is None or stream.sender._reset_error_code is not None:
                return  # the peer went away or stopped the stream (bulk ended)
            if len(stream.sender._buffer) < AHEAD:
                k = min(CHUNK, left)
                left -= k
                self.sent[stream_id] = self.sent.get(stream_id, 0) + k
                self.h3.send_data(stream_id, zeros[:k], end_stream=left == 0)
                self.transmit()
            else:
                await asyncio.sleep(0.002)
        if n == 0:
            self.h3.send_data(stream_id, b"", end_stream=True)
            self.transmit()


def endpoint(args) -> Callable[..., Endpoint]:
    return functools.partial(Endpoint, pacing=args.pacing, rcvbuf=args.rcvbuf)


def address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


async def run_server(args) -> int:
    qlog = open_qlog(args.qlog_dir, "server")
    config = configuration(False, args.cc, args.datagram_size, qlog)
    config.load_cert_chain(args.cert, args.key)
    server = await serve(*address(args.bind), configuration=config, create_protocol=endpoint(args))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    with streaming(qlog):
        await stop.wait()
        server.close()
    return 0


async def run_client(args) -> int:
    url = urlparse(args.url)
    qlog = open_qlog(args.qlog_dir, "client")
    config = configuration(True, args.cc, args.datagram_size, qlog)
    res: dict = {"connect_start_ns": time.monotonic_ns(), "ended_by": "bytes", "bytes": 0}
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()

    def on_signal() -> None:
        res["ended_by"] = "signal"
        stop.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, on_signal)
    error = None
    with streaming(qlog):
        async with connect(
            url.hostname or "", url.port or 443, configuration=config, create_protocol=endpoint(args)
        ) as proto:
            assert isinstance(proto, Endpoint)
            conn = proto
            stream_id = conn._quic.get_next_available_stream_id()
            fut = conn.done.setdefault(stream_id, loop.create_future())
            method = b"POST" if args.upload is not None else b"GET"
            conn.h3.send_headers(
                stream_id,
                [
                    (b":method", method),
                    (b":scheme", b"https"),
                    (b":authority", url.netloc.encode()),
                    (b":path", url.path.encode()),
                ],
                end_stream=False,
            )
            if args.upload is not None:
                asyncio.ensure_future(conn.send_body(stream_id, args.upload))
            else:
                conn.h3.send_data(stream_id, b"", end_stream=True)
            conn.transmit()
            waiters = [asyncio.ensure_future(fut), asyncio.ensure_future(stop.wait())]
            timeout = args.duration if args.duration else None
            finished, _ = await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if not finished:
                res["ended_by"] = "duration"
            for w in waiters:
                w.cancel()
            res["end_ns"] = time.monotonic_ns()
            res["first_byte_ns"] = conn.first_byte_ns
            res["status"] = conn.status
            # An upload: what the application handed to aioquic (a bulk one ends with its
            # duration, before the server could answer).
            res["bytes"] = conn.sent.get(stream_id, 0) if args.upload is not None else conn.received.get(stream_id, 0)
            conn.close()
            await conn.wait_closed()
    print(json.dumps(res), flush=True)
    if error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m transportlab.stacks.aioquic_endpoint", description=__doc__)
    sub = ap.add_subparsers(dest="end", required=True)
    s = sub.add_parser("server")
    s.add_argument("--bind", required=True)
    s.add_argument("--cert", required=True)
    s.add_argument("--key", required=True)
    c = sub.add_parser("client")
    c.add_argument("--url", required=True)
    c.add_argument("--upload", type=int)
    c.add_argument("--duration", type=float)
    for p in (s, c):
        p.add_argument("--cc", choices=("reno", "cubic"), default="reno")
        p.add_argument("--qlog-dir", type=Path)
        p.add_argument("--datagram-size", type=int, help="UDP payload size (aioquic's max_datagram_size)")
        p.add_argument("--no-pacing", dest="pacing", action="store_false", help="send as the window allows")
        p.add_argument("--rcvbuf", type=int, help="bytes asked for the UDP receive buffer (the kernel doubles it)")
    args = ap.parse_args(argv)
    return asyncio.run(run_server(args) if args.end == "server" else run_client(args))


if __name__ == "__main__":
    sys.exit(main())
