"""The records a run directory holds, as models: `scenario.json` (the scenario as run,
in SI units: seconds, bits/s, bytes) and `metrics.json` (what the metrics stage computed).
Written by the run and metrics stages, read back only through `artefacts.rundir`.

Each record carries `version`; a reader refuses a version it does not know (CHANGELOG.md
lists them). Records written before versions existed read as version 1."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

SCENARIO_VERSION = 1
METRICS_VERSION = 1


class RecordError(ValueError):
    pass


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def dump(self) -> dict:
        return self.model_dump(by_alias=True, mode="json")


def _known_version(known: int, name: str):
    def check(cls, v: int) -> int:
        if v != known:
            raise ValueError(f"{name} version {v} is not one this transportlab reads (it reads version {known})")
        return v

    return field_validator("version")(classmethod(check))


# --- scenario.json ---------------------------------------------------------------


class PointRecord(_Record):
    label: str
    values: dict[str, Any] = {}  # swept field path → value as written
    axes: dict[str, str] = {}
    # Swept values that are numbers, in SI units with their kind ("rate", "duration",
    # "size", "%" or null for a plain number), so readers never parse units again.
    numeric: dict[str, tuple[float, str | None]] = {}


class LinkRecord(_Record):
    name: str
    between: list[str]
    # SI parameters of each direction (rate bit/s, delay s, queue, loss, multipath …),
    # as the plan's Direction holds them.
    forward: dict[str, Any]
    reverse: dict[str, Any]


class FlowRecord(_Record):
    model_config = ConfigDict(extra="allow", populate_by_name=True)  # kind-specific fields

    name: str
    from_: str = Field(alias="from")
    to: str
    protocol: str
    direction: str
    start_s: float
    end_s: float
    port: int
    cc: str | None = None


class ProbeRecord(_Record):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    name: str
    from_: str = Field(alias="from")
    to: str


class ScenarioRecord(_Record):
    version: int = SCENARIO_VERSION
    _v = _known_version(SCENARIO_VERSION, "scenario.json")
    name: str
    description: str | None = None
    duration_s: float
    stop_when: str
    seed: int
    scenario_seed: int
    repetition: int
    run_id: str
    point: PointRecord
    hosts: list[str]
    routers: list[str] = []
    addresses: dict[str, str]
    links: list[LinkRecord]
    flows: list[FlowRecord]
    probes: list[ProbeRecord]
    sysctls: dict[str, dict[str, Any]] = {}
    analysis: dict[str, Any] = {}
    # "emulated" (namespaces and the engine) or "simulated" (tlab-sim, virtual time), and
    # in a simulated run which stack played each protocol ("quinn-proto", …).
    mode: Literal["emulated", "simulated"] = "emulated"
    stacks: dict[str, str] = {}

    def flow(self, name: str) -> FlowRecord | None:
        return next((f for f in self.flows if f.name == name), None)


# --- metrics.json ----------------------------------------------------------------


class Stats(_Record):
    """Distribution of a delay in ms (mean and percentiles)."""

    mean: float
    p50: float
    p95: float
    p99: float


class FlowKey(_Record):
    src: int
    dst: int
    sport: int
    dport: int
    proto: int


class FlowMetrics(_Record):
    """One flow. Kind-specific fields (retransmissions for tcp, lost_packets for quic,
    jitter for udp, …) are None where they do not apply."""

    protocol: str
    cc: str | None = None
    from_: str = Field(alias="from")
    to: str
    direction: str
    error: str | None = None  # why the numbers below are missing
    data: FlowKey | None = None
    path: list[int] = []
    bottleneck: int | None = None
    bytes_delivered: int = 0
    throughput_bps: float = 0.0
    goodput_bps: float | None = None
    completion_s: float | None = None
    complete: bool | None = None
    rtt_ms: Stats | None = None
    queueing_delay_ms: Stats | None = None
    # The S4 study's definitions, from the log, for every protocol: bytes delivered over
    # (last − first arrival at the receiver); data packets' one-way delay across the path
    # and its mean absolute ipdv.
    throughput_arrivals_bps: float | None = None
    path_delay_ms: Stats | None = None
    path_ipdv_ms: float | None = None
    loss_rate: float | None = None
    drops: dict[str, int] = {}
    marks: int = 0  # ECN marks on the flow's packets (CE set by a queue)
    retransmissions: int | None = None
    window_limited: bool | None = None
    impossible_window: str | None = None  # kernel TCP: the first TCP_INFO window no socket can have
    lost_packets: int | None = None
    congestion_events: int | None = None
    sent: int | None = None
    received: int | None = None
    jitter_rfc3550_ms: float | None = None
    ipdv_rfc3393_ms: Any = None
    one_way_delay_ms: Any = None
    # tcp web pages (docs/metrics.md): page time and objects' time to first byte (ms:
    # mean, p50, p90, p99, max) over the pages the client completed.
    pages_completed: int | None = None
    page_time_ms: dict[str, float] | None = None
    object_ttfb_ms: dict[str, float] | None = None
    utp_verified: bool | None = None
    timeouts: int | None = None
    packets_sent_by_data_sender: int | None = None
    bytes_sent_by_data_sender: int | None = None
    packets_sent_by_data_receiver: int | None = None
    bytes_sent_by_data_receiver: int | None = None
    # tcp records workload (docs/metrics.md): sent by the server, handed over by the client.
    records_sent: int | None = None
    records_delivered: int | None = None
    records_malformed: int | None = None
    records_via_packet: int | None = None
    record_latency_ms: Stats | None = None
    records_late_share: float | None = None
    records_rtt_ms: float | None = None
    # Workloads on records (docs/metrics.md): goodput of the records delivered and its
    # share of the bottleneck's rate (streaming), the sender's retransmissions per segment
    # sent (tcp; quic: packets declared lost per packet sent; udp: none), VoIP frame
    # statistics (flows with `playout`), both ends' CPU time (tcp, quic, udp).
    records_goodput_bps: float | None = None
    bandwidth_efficiency: float | None = None
    retransmission_rate: float | None = None
    voip: dict[str, Any] | None = None
    cpu_s: dict[str, float | None] | None = None


class ProbeMetrics(_Record):
    error: str | None = None
    # The probe agent's own statistics ({"mean_ms": …, "p99_ms": …}).
    rtt_ms: dict[str, Any] | None = None
    sent: int | None = None
    received: int | None = None
    lost: int | None = None
    owd_forward_ms: dict[str, Any] | None = None
    owd_reverse_ms: dict[str, Any] | None = None
    # Medians per hop in µs (metrics.probe_hops): the engine's hand-over to the receiving
    # agent's read among them; None without a packet log or when probes were lost.
    hops_us: dict[str, float] | None = None


class MergeCounters(_Record):
    """A multipath direction's merge over the run, as the engine (or the simulator)
    counted it: packets handed on, copies or late packets discarded, sequence numbers
    given up at t-Reordering expiries (each a wait of t-Reordering for the packets behind
    it), the expiries, and the most packets held at once."""

    delivered: int
    discarded: int
    gap_skipped: int
    timer_expiries: int
    max_buffered: int


class LinkMetrics(_Record):
    index: int
    delivered_bits: int
    capacity_bps: float | None = None
    utilisation: float | None = None
    drops: dict[str, int] = {}
    marks: int = 0
    merge: MergeCounters | None = None  # multipath directions with a merge only


class HostMetrics(_Record):
    """An emulated host's UDP counters over the run (its namespace's /proc/net/snmp)."""

    udp_datagrams_received: int
    # Datagrams its full socket receive buffers turned away (RcvbufErrors): lost on the
    # host, after the network delivered them.
    udp_receive_buffer_errors: int
    udp_input_errors: int


class WindowMetrics(_Record):
    start_s: float
    end_s: float
    bytes: dict[str, int]
    bottleneck: str | None = None
    utilisation: float | None = None
    byte_difference: int | None = None
    convergence_s: float | None = None


class RunInfo(_Record):
    scenario: str
    point: str
    values: dict[str, Any] = {}
    numeric: dict[str, tuple[float, str | None]] = {}  # as PointRecord.numeric
    repetition: int
    seed: int
    run_id: str
    t0_ns: int
    duration_s: float


class MetricsRecord(_Record):
    version: int = METRICS_VERSION
    _v = _known_version(METRICS_VERSION, "metrics.json")
    run: RunInfo
    flows: dict[str, FlowMetrics]
    probes: dict[str, ProbeMetrics] = {}
    links: dict[str, LinkMetrics] = {}
    hosts: dict[str, HostMetrics] = {}
    jain_index: float | None = None
    window: WindowMetrics | None = None
    unintended_drops: int = 0
    engine: dict[str, Any] | None = None  # the engine's hand-over lateness statistics
