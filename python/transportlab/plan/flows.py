"""What the runner needs besides the topology, in SI units (seconds, bits/s, bytes), as
plain dataclasses. Names follow the scenario file; `from_` is `from`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from transportlab.plan.topology import Topology


@dataclass(frozen=True)
class Objects:
    count: int
    size: int  # bytes each


@dataclass(frozen=True)
class Page:
    """tcp web pages: one primary object, then the secondaries (bytes each)."""

    primary: int
    secondaries: tuple[int, ...]
    framing: str  # "plain" (back to back) or "mstcp" (a sub-stream per object)


@dataclass(frozen=True)
class Flow:
    """`from_` is the client that connects, `to` the server. upload: data client→server;
    download: server→client. Ends at the first of: `stop`, `bytes` sent, `objects`
    fetched, `count` datagrams sent, or `end` (the scenario's duration)."""

    name: str
    from_: str
    to: str
    protocol: str  # a flow kind (transportlab.kinds)
    direction: Literal["upload", "download"]
    start: float
    end: float  # stop if given, else the scenario's duration
    port: int
    stop: float | None = None
    bytes: int | None = None
    objects: Objects | None = None
    page: Page | None = None
    count: int | None = None
    cc: str | None = None
    cc_params: dict = field(default_factory=dict)
    rate: float | None = None  # udp: payload bits/s; quic messages: message bits/s
    interval: float | None = None  # udp: seconds between bursts; quic: between messages; tcp: records
    size: int | None = None  # udp: datagram payload bytes; quic: message bytes; tcp: record bytes
    burst: int = 1  # udp: datagrams per deadline
    streams: int = 1
    mss: int | None = None  # tcp: TCP_MAXSEG; quic: datagram size
    tls: bool = False  # tcp: TLS 1.3 over the connection ("HTTPS")
    rcvbuf: int | None = None  # quic: UDP socket receive buffer of both ends (bytes)
    qlog: bool = True  # quic: both ends write their connection's qlog
    pacing: bool = True  # quic: false = the sender's pacer off (aioquic)
    tcp_info_interval: float | None = None  # tcp only
    # records (tcp, quic, udp): how the client receives them (kinds/*.py)
    delivery: Literal["ordered", "unordered", "streams"] | None = None
    implementation: str | None = None  # utp: the uTP implementation; quic: the QUIC stack
    application: str = "agent"  # "agent"; quic stacks "http3"; tcp "http1", "https", "http2"
    http_server: str = "nginx"  # tcp HTTP: "nginx" or "hypercorn"
    playout: tuple[float, ...] | None = None  # tcp records as VoIP frames: jitter buffers (s)
    seed: int = 0  # the flow's own random stream (utp: the content's bytes)

    @property
    def sender(self) -> str:
        return self.from_ if self.direction == "upload" else self.to

    @property
    def receiver(self) -> str:
        return self.to if self.direction == "upload" else self.from_


@dataclass(frozen=True)
class Probe:
    """Echo probes `from_` → `to` every `interval` from `start` until `end`, or `count` of them."""

    name: str
    from_: str
    to: str
    interval: float
    start: float
    end: float  # until if given, else the scenario's duration
    port: int
    count: int | None = None
    size: int = 64


@dataclass(frozen=True)
class Analysis:
    bin: float
    window: tuple[float, float]
    fairness_delta: float | None
    fairness_hold: float
    bottleneck: str | None


@dataclass(frozen=True)
class Capture:
    """pcapng capture: the first `snaplen` bytes of the packets leaving `directions`."""

    snaplen: int
    directions: tuple[str, ...]


@dataclass(frozen=True)
class Resolved:
    """A validated scenario (one sweep point) lowered for the runner."""

    name: str
    description: str | None
    duration: float
    stop_when: str  # "duration" or "flows-done"
    seed: int
    repetitions: int
    topology: Topology
    routers: tuple[str, ...]
    flows: tuple[Flow, ...]
    probes: tuple[Probe, ...]
    sysctls: dict[str, dict[str, str]]
    analysis: Analysis
    capture: Capture | None = None
