"""One uTP transfer with libtorrent, at one end: the session, the torrent, the loop that
samples the series and notices connection, completion, the peer leaving, a stop signal
or the end of the time allowed, and the results the summary reports.

Times are CLOCK_MONOTONIC in nanoseconds (`time.monotonic_ns`), as in every agent."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from transportlab.utp_agent.content import Content
from transportlab.utp_agent.session import COUNTERS, REQUEST_QUEUE_CAP, UTP_SOCKET_FLAG, settings

LISTEN_TIMEOUT_S = 5.0
RECONNECT_EVERY_NS = 1_000_000_000
# libtorrent's errors::upload_upload_connection: it closes a connection between two
# seeds, so the sender sees the receiver holding every piece when it closes with this.
UPLOAD_UPLOAD_CONNECTION = 37
# uTP sockets still open (connecting, connected or closing), by libtorrent's counters.
OPEN_UTP_SOCKETS = ("utp.num_utp_syn_sent", "utp.num_utp_connected", "utp.num_utp_fin_sent", "utp.num_utp_close_wait")


class TransferError(Exception):
    """The transfer failed (no connection, not uTP, the peer left early, a libtorrent
    error); the summary is still written and the agent exits 1."""


@dataclass(frozen=True)
class Job:
    end: Literal["server", "client"]
    role: Literal["sender", "receiver"]
    content: Content
    bulk: bool  # a transfer for a duration (content = its upper bound)
    params: dict[str, int]  # cc_params of the flow
    listen: str  # "ADDR:PORT"
    connect: tuple[str, int] | None  # the server (client only)
    duration_ns: int | None  # client: transfer for this long; server: serve at most this long
    connect_timeout_ns: int
    sample_interval_ns: int


@dataclass
class State:
    """What the loop has seen so far."""

    start_ns: int
    port: int = 0
    connect_requested_ns: int | None = None  # connect_peer() called
    connect_start_ns: int | None = None  # libtorrent began the uTP connection (peer_connect_alert)
    connected_ns: int | None = None
    first_byte_ns: int | None = None
    complete_ns: int | None = None
    end_ns: int | None = None
    peer: str | None = None
    peer_left: str | None = None
    utp_flag_seen: bool = False
    max_utp_peers: int = 0
    stopped_by: str | None = None
    error: str | None = None
    rows: list[dict] = field(default_factory=list)
    pending: list[dict] = field(default_factory=list)  # rows waiting for their counters
    last_counters: dict[str, int] = field(default_factory=dict)
    settings_in_effect: dict[str, Any] = field(default_factory=dict)
    # libtorrent's performance alerts by warning name (e.g. the disk queue holding up
    # reads from the socket), with when the first came.
    performance_warnings: dict[str, dict[str, int]] = field(default_factory=dict)
    # Disconnects of connections without a BitTorrent handshake (no peer id), ignored.
    stray_disconnects: list[str] = field(default_factory=list)
    status: Any = None


def run(lt, job: Job, workdir: Path, stop_requested: Callable[[], bool], on_ready: Callable[[int], None]) -> State:
    """Runs the transfer; returns the state (with `error` set on failure)."""
    st = State(start_ns=time.monotonic_ns())
    ses = lt.session(settings(lt, job.listen, job.params))
    try:
        st.port = _wait_listening(lt, ses)
        pack = ses.get_settings()
        st.settings_in_effect = {k: pack[k] for k in sorted(pack) if k.startswith("utp_") or k in REQUEST_QUEUE_CAP}
        if job.role == "sender":
            job.content.write(workdir)
        handle = ses.add_torrent(_torrent_params(lt, job, workdir))
        if job.end == "server":
            on_ready(st.port)
        try:
            _loop(lt, ses, handle, job, st, stop_requested)
        except TransferError as e:
            st.error = str(e)
        st.end_ns = st.end_ns or time.monotonic_ns()
        try:  # the last row: where the transfer stood at its end
            _sample(lt, ses, handle, job, st, st.end_ns)
            _drain_stats(lt, ses, st, timeout_s=0.5)
        except TransferError as e:
            st.error = st.error or str(e)
        # Stopped by a signal, the runner is tearing down and kills what outlives its
        # grace (3 s): close quickly so the summary is written and the files removed.
        _close(lt, ses, handle, timeout_s=0.2 if st.stopped_by == "signal" else 1.0)
    finally:
        ses.pause()
        del ses
    if st.error is None:
        st.error = _not_utp(st)
    return st


def _close(lt, ses, handle, timeout_s: float = 1.0) -> None:
    """Closes this end's connection the way libtorrent closes one (a uTP FIN, answered)
    before the session goes, so the peer sees the transfer end instead of a silence."""
    handle.pause()
    deadline = time.monotonic() + timeout_s
    ses.post_session_stats()
    while time.monotonic() < deadline:
        ses.wait_for_alert(50)
        for a in ses.pop_alerts():
            if isinstance(a, lt.session_stats_alert):
                open_sockets = sum(int(a.values[k]) for k in OPEN_UTP_SOCKETS)
                if open_sockets == 0:
                    return
                ses.post_session_stats()


def _wait_listening(lt, ses) -> int:
    deadline = time.monotonic() + LISTEN_TIMEOUT_S
    while time.monotonic() < deadline:
        ses.wait_for_alert(100)
        for a in ses.pop_alerts():
            if isinstance(a, lt.listen_succeeded_alert) and a.socket_type == lt.socket_type_t.utp:
                return int(a.port)
            if isinstance(a, lt.listen_failed_alert):
                raise TransferError(f"cannot listen: {a.message()}")
    raise TransferError(f"libtorrent opened no uTP socket within {LISTEN_TIMEOUT_S:g} s")


def _torrent_params(lt, job: Job, workdir: Path):
    atp = lt.add_torrent_params()
    atp.ti = lt.torrent_info(job.content.torrent(lt))
    atp.save_path = str(workdir)
    flags = atp.flags & ~lt.torrent_flags.auto_managed & ~lt.torrent_flags.paused
    flags |= lt.torrent_flags.disable_dht | lt.torrent_flags.disable_lsd | lt.torrent_flags.disable_pex
    if job.role == "sender":
        flags |= lt.torrent_flags.seed_mode  # the file was just written: no check pass
    atp.flags = flags
    return atp


def _loop(lt, ses, handle, job: Job, st: State, stop_requested: Callable[[], bool]) -> None:
    next_sample = st.start_ns
    deadline = st.start_ns + job.duration_ns if job.end == "server" and job.duration_ns else None
    last_connect = None
    if job.connect is not None:
        st.connect_requested_ns = time.monotonic_ns()
    while True:
        now = time.monotonic_ns()
        if stop_requested():
            st.stopped_by = "signal"
            return
        if deadline is not None and now >= deadline:
            st.stopped_by = "duration"
            return
        if job.connect is not None and st.connected_ns is None:
            assert st.connect_requested_ns is not None
            if now - st.connect_requested_ns > job.connect_timeout_ns:
                raise TransferError(
                    f"no uTP connection to {job.connect[0]}:{job.connect[1]} within {job.connect_timeout_ns / 1e9:g} s"
                )
            if last_connect is None or now - last_connect >= RECONNECT_EVERY_NS:
                handle.connect_peer(job.connect)
                last_connect = now
        if now >= next_sample:
            _sample(lt, ses, handle, job, st, now)
            next_sample += job.sample_interval_ns * max(1, (now - next_sample) // job.sample_interval_ns + 1)
            if _done(job, st, now):
                return
        ses.wait_for_alert(max(1, min(100, (next_sample - time.monotonic_ns()) // 1_000_000)))
        for a in ses.pop_alerts():
            _on_alert(lt, a, job, st)
        if _done(job, st, time.monotonic_ns()):
            return


def _on_alert(lt, a, job: Job, st: State) -> None:
    now = time.monotonic_ns()
    if isinstance(a, lt.session_stats_alert):
        _attach_counters(lt, a, st)
    elif isinstance(a, lt.torrent_finished_alert) and job.role == "receiver" and st.complete_ns is None:
        st.complete_ns = now
    elif isinstance(a, lt.peer_connect_alert) and job.connect is not None and st.connect_start_ns is None:
        st.connect_start_ns = now
    elif isinstance(a, lt.peer_disconnected_alert) and a.pid.is_all_zeros():
        # A connection that never completed the BitTorrent handshake: a stray the client's
        # repeated connect_peer made while its SYNs were being lost. It carried no
        # transfer, so its timing out is not the transfer's peer leaving.
        st.stray_disconnects.append(a.message())
    elif isinstance(a, lt.peer_disconnected_alert) and st.connected_ns is not None and st.peer_left is None:
        st.peer_left = a.message()
        both_seeds = a.error.category().name() == "libtorrent" and a.error.value() == UPLOAD_UPLOAD_CONNECTION
        if job.role == "sender" and not job.bulk and both_seeds and st.complete_ns is None:
            st.complete_ns = now
    elif isinstance(a, lt.performance_alert):
        name = getattr(a.warning_code, "name", str(a.warning_code))
        seen = st.performance_warnings.setdefault(name, {"count": 0, "first_ns": now})
        seen["count"] += 1
    elif isinstance(a, lt.torrent_error_alert | lt.file_error_alert):
        raise TransferError(f"libtorrent: {a.message()}")


def _done(job: Job, st: State, now: int) -> bool:
    """Whether this end's part is over; raises when it ended in failure."""
    if job.bulk and job.role == "receiver" and st.complete_ns is not None:
        raise TransferError(
            f"the bulk content ({job.content.size} bytes) ran out before the duration ended; "
            "the path is faster than the agent's bound"
        )
    if job.end == "client":
        if job.bulk and st.connected_ns is not None and job.duration_ns and now >= st.connected_ns + job.duration_ns:
            st.stopped_by, st.end_ns = "duration", now
            return True
        if not job.bulk and st.complete_ns is not None:
            st.stopped_by, st.end_ns = "bytes", st.complete_ns
            return True
        if st.peer_left is not None:
            raise TransferError(f"the peer closed the connection before the transfer ended ({st.peer_left})")
        return False
    if st.peer_left is not None:  # a server serves one connection
        st.stopped_by = "once"
        return True
    return False


def _sample(lt, ses, handle, job: Job, st: State, now: int) -> None:
    s = handle.status()
    st.status = s
    peers = [p for p in handle.get_peer_info() if not p.flags & (lt.peer_info.connecting | lt.peer_info.handshake)]
    rtt = None
    for p in peers:
        if not p.flags & UTP_SOCKET_FLAG:
            raise TransferError(f"the peer {p.ip[0]}:{p.ip[1]} connected over TCP, not uTP")
        st.utp_flag_seen = True
        rtt = p.rtt
        if st.connected_ns is None:
            st.connected_ns, st.peer = now, f"{p.ip[0]}:{p.ip[1]}"
        # The sender's transfer is complete when the receiver holds every piece.
        if job.role == "sender" and not job.bulk and st.complete_ns is None and p.flags & lt.peer_info.seed:
            st.complete_ns = now
    moved = s.total_payload_upload if job.role == "sender" else s.total_payload_download
    if moved > 0 and st.first_byte_ns is None:
        st.first_byte_ns = now
    rate = s.upload_payload_rate if job.role == "sender" else s.download_payload_rate
    st.pending.append({"conn": 0, "t_ns": now, "bytes": moved, "payload_rate_Bps": rate, "rtt_ms": rtt})
    ses.post_session_stats()


def _attach_counters(lt, a, st: State) -> None:
    values = a.values  # {metric name: value}
    missing = [name for name in COUNTERS.values() if name not in values]
    if missing:
        raise TransferError(f"this libtorrent ({lt.__version__}) lacks the counters {', '.join(missing)}")
    counters = {column: int(values[name]) for column, name in COUNTERS.items()}
    st.last_counters = counters
    st.max_utp_peers = max(st.max_utp_peers, counters["utp_peers"])
    if st.pending:
        st.rows.append({**st.pending.pop(0), **counters})


def _drain_stats(lt, ses, st: State, timeout_s: float = 1.0) -> None:
    """Waits for the counters of the rows still pending (the last sample's)."""
    deadline = time.monotonic() + timeout_s
    while st.pending and time.monotonic() < deadline:
        ses.wait_for_alert(50)
        for a in ses.pop_alerts():
            if isinstance(a, lt.session_stats_alert):
                _attach_counters(lt, a, st)
    st.rows.extend({**row, **st.last_counters} for row in st.pending)
    st.pending.clear()


def _not_utp(st: State) -> str | None:
    """Why a transfer that moved data was not uTP, or None."""
    moved = st.rows[-1]["bytes"] if st.rows else 0
    if moved and not (st.utp_flag_seen and st.max_utp_peers >= 1):
        return (
            f"the transfer was not uTP: peer_info flags showed uTP {st.utp_flag_seen}, "
            f"peer.num_utp_peers peaked at {st.max_utp_peers}"
        )
    return None
