"""The metrics layer: turns a run's raw artefacts (the engine's packet event log as a
NumPy record array or DataFrame, the agents' series as DataFrames) into numbers.

Units everywhere: times in ns (CLOCK_MONOTONIC, as in the log), sizes in bytes (IP total
length for log-based metrics), rates in bits/s. Windows are half-open [start, end).
Every function is vectorised (NumPy/pandas); none reads files.
"""

from transportlab.metrics.convergence import crossing_time, delta_fair_convergence
from transportlab.metrics.delay import one_way_delay, queueing_delay, sojourn
from transportlab.metrics.delivery import bytes_delivered, goodput
from transportlab.metrics.fairness import byte_difference, jain_index, pairwise_byte_difference
from transportlab.metrics.handover import probe_hops
from transportlab.metrics.jitter import (
    interarrival,
    ipdv_rfc3393,
    ipdv_rfc3393_series,
    jitter_rfc3550,
    jitter_rfc3550_series,
)
from transportlab.metrics.logflows import Flow, flow_codes, flow_mask, flow_path, flows, select
from transportlab.metrics.loss import drops_by_reason, flow_loss, link_loss, unintended_drops
from transportlab.metrics.record_latency import late_share, record_latencies
from transportlab.metrics.retransmissions import (
    count_retransmissions_from_log,
    retransmissions_from_log,
    retransmissions_from_tcp_info,
    unwrap_seq,
)
from transportlab.metrics.rtt import probe_rtts, rtt_stats
from transportlab.metrics.summary import summarize
from transportlab.metrics.throughput import throughput, throughput_by_flow
from transportlab.metrics.utilisation import link_utilisation, utilisation, utilisation_over_time
from transportlab.metrics.web import ms_stats, object_ttfb, page_times
from transportlab.metrics.workloads import (
    bandwidth_efficiency,
    competing_counts,
    cpu_ratio,
    delivered_over_time,
    frame_latencies,
    frame_send_times,
    loss_bursts,
    playout_misses,
    playout_stats,
    records_goodput_bps,
    retransmission_rate,
    voip_metrics,
)

__all__ = [
    "page_times",
    "object_ttfb",
    "ms_stats",
    "Flow",
    "flows",
    "flow_codes",
    "flow_mask",
    "flow_path",
    "select",
    "throughput",
    "throughput_by_flow",
    "bytes_delivered",
    "goodput",
    "sojourn",
    "one_way_delay",
    "probe_hops",
    "queueing_delay",
    "jitter_rfc3550",
    "jitter_rfc3550_series",
    "interarrival",
    "ipdv_rfc3393",
    "ipdv_rfc3393_series",
    "drops_by_reason",
    "link_loss",
    "flow_loss",
    "unintended_drops",
    "retransmissions_from_log",
    "count_retransmissions_from_log",
    "retransmissions_from_tcp_info",
    "unwrap_seq",
    "jain_index",
    "byte_difference",
    "pairwise_byte_difference",
    "utilisation",
    "link_utilisation",
    "utilisation_over_time",
    "crossing_time",
    "delta_fair_convergence",
    "record_latencies",
    "late_share",
    "frame_latencies",
    "playout_misses",
    "loss_bursts",
    "playout_stats",
    "frame_send_times",
    "competing_counts",
    "voip_metrics",
    "bandwidth_efficiency",
    "records_goodput_bps",
    "retransmission_rate",
    "cpu_ratio",
    "delivered_over_time",
    "probe_rtts",
    "rtt_stats",
    "summarize",
]
