"""The flow metrics of the catalogue, declared once: each one's column, label, unit, how
a value is printed, and how the sweep plots draw it. The catalogue (its columns), the
tables, the sweep plots, the HTML report and `tlab compare` all read this list; its order
is the display order. Definitions: docs/metrics.md."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# How a value is printed (report.html.FORMATS maps each to its function): a rate in
# bit/s, seconds, milliseconds, a fraction as a percentage, a plain number, bytes.
Format = Literal["rate", "s", "ms", "pct", "num", "bytes"]
# Where a column comes from: a flow record's field as it is, a statistic of a flow's
# distribution (`<name>_<stat>_ms`), the run (one value repeated on each flow's row).
Source = Literal["flow", "distribution", "run"]


@dataclass(frozen=True)
class Metric:
    name: str  # the catalogue column
    label: str  # a table's column heading
    unit: str  # "" for a fraction or a flag
    format: Format = "num"
    source: Source = "flow"
    numeric: bool = True
    # A sweep plot of it (metric vs swept value, box plot): its title and y-axis label;
    # `scale` divides the values ("rate": by the bit/s prefix that fits the largest).
    plot_title: str | None = None
    axis: str | None = None
    scale: float | Literal["rate"] = 1.0
    # The y axis is logarithmic when the plotted values span more than 1.5 decades.
    log_when_spread: bool = False
    in_table: bool = False  # a column of the sweep tables
    in_compare: bool = False  # a column of `tlab compare`'s table
    shown_when_nonzero: bool = False  # a table leaves it out when every run has 0

    @property
    def plotted(self) -> bool:
        return self.plot_title is not None


METRICS: tuple[Metric, ...] = (
    Metric("bytes_delivered", "bytes delivered", "bytes", "bytes"),
    Metric("throughput_bps", "throughput", "bit/s", "rate", plot_title="Throughput", axis="throughput", scale="rate",
           in_table=True, in_compare=True),
    Metric("goodput_bps", "goodput", "bit/s", "rate", plot_title="Goodput", axis="goodput", scale="rate", in_table=True, in_compare=True),
    Metric("throughput_arrivals_bps", "throughput over arrivals", "bit/s", "rate"),
    Metric("completion_s", "completion", "s", "s", plot_title="Completion time", axis="completion time (s)", in_table=True, in_compare=True),
    Metric("queueing_delay_mean_ms", "queueing delay (mean)", "ms", "ms", "distribution",
           plot_title="Mean queueing delay", axis="mean queueing delay (ms)", in_table=True, in_compare=True),
    Metric("queueing_delay_p99_ms", "queueing delay (p99)", "ms", "ms", "distribution",
           plot_title="99th-percentile queueing delay", axis="p99 queueing delay (ms)", in_table=True, in_compare=True),
    Metric("path_delay_p95_ms", "path delay (p95)", "ms", "ms", "distribution",
           plot_title="95th-percentile path delay", axis="p95 one-way delay across the path (ms)", in_table=True, in_compare=True),
    Metric("rtt_mean_ms", "RTT (mean)", "ms", "ms", "distribution", plot_title="Mean RTT", axis="mean RTT (ms)",
           log_when_spread=True, in_table=True, in_compare=True),
    Metric("jitter_rfc3550_ms", "jitter (RFC 3550)", "ms", "ms", plot_title="Jitter (RFC 3550)",
           axis="RFC 3550 jitter (ms)", in_compare=True),
    Metric("path_ipdv_ms", "path delay variation (RFC 3393 ipdv)", "ms", "ms",
           plot_title="Path delay variation (RFC 3393 ipdv)", axis="mean |ipdv| across the path (ms)"),
    Metric("loss_rate", "loss", "", "pct", plot_title="Loss rate", axis="loss rate (%)", scale=0.01, in_table=True, in_compare=True),
    Metric("retransmissions", "retransmissions", "segments", plot_title="Retransmissions",
           axis="retransmitted segments", in_table=True, in_compare=True),
    Metric("marks", "ECN marks", "packets", in_table=True, shown_when_nonzero=True),
    Metric("lost_packets", "lost packets (QUIC)", "packets", in_table=True),
    Metric("packets_sent_by_data_sender", "packets sent (data sender)", "packets", in_table=True),
    Metric("bytes_sent_by_data_sender", "bytes sent (data sender)", "bytes", "num", in_table=True),
    Metric("complete", "complete", "", numeric=False),
    Metric("window_limited", "window-limited", "", numeric=False),
    Metric("impossible_window", "impossible kernel window", "", numeric=False),
    Metric("bottleneck", "bottleneck", "", numeric=False),
    Metric("records_sent", "records sent", "records"),
    Metric("records_delivered", "records delivered", "records"),
    Metric("records_late_share", "records late by ≥ 1 RTT", "", "pct"),
    Metric("records_goodput_bps", "records goodput", "bit/s", "rate"),
    Metric("bandwidth_efficiency", "bandwidth efficiency", "", "pct"),
    Metric("retransmission_rate", "retransmission rate", "", "pct"),
    Metric("pages_completed", "pages completed", "pages"),
    Metric("jain_index", "Jain's index", "", source="run", plot_title="Jain's fairness index",
           axis="Jain's index (all flows)"),
)  # fmt: skip

BY_NAME = {m.name: m for m in METRICS}
# The flow record's fields the catalogue copies as they are.
FLOW_FIELDS = [m.name for m in METRICS if m.source == "flow"]
TABLE = [m for m in METRICS if m.in_table]
COMPARE = [m for m in METRICS if m.in_compare]
PLOTTED = [m for m in METRICS if m.plotted]
