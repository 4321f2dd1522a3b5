"""The tables of bpf/RESULTS.md from finished runs (their catalogues, the `runs` view of
`tlab query`): S2 kernel TCP per algorithm and rate, S3 per arm and loss.

    tlab table bpf results/bpf
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from transportlab.artefacts.catalogue import query
from transportlab.report.tables.common import TableError, markdown_frame

S2 = """
select "axis:rate" as rate, cc,
       round(rtt_mean_ms, 1) as "average RTT (ms, TCP_INFO srtt)",
       round(queueing_delay_mean_ms, 1) as "queueing delay (ms)",
       cast(retransmissions as integer) as retransmissions,
       round(throughput_bps / 1e6, 2) as "throughput (Mbit/s)"
from runs where flow = 'bulk'
order by cast(regexp_extract(rate, '^[0-9]+') as integer) * (case when rate like '%Gbit' then 1000 else 1 end), cc
"""

S3 = """
with c as (
  select "axis:loss" as loss, protocol, cc, repetition, flow, window_bytes, window_byte_difference,
         window_utilisation, convergence_s, rtt_mean_ms, coalesce(retransmissions, lost_packets) as lost
  from runs where flow like 'client%'
), r as (
  select loss, protocol, cc, repetition,
         max(case when flow = 'client1' then window_bytes end) / 1e6 as d1,
         max(case when flow = 'client2' then window_bytes end) / 1e6 as d2,
         max(window_byte_difference) / 1e6 as diff, max(window_utilisation) as util,
         max(convergence_s) as conv, avg(rtt_mean_ms) as rtt, sum(lost) as lost
  from c group by all
)
select loss, protocol || ' ' || cc as arm, count(*) as reps,
       round(avg(d1), 2) as "D1 (MB)", round(avg(d2), 2) as "D2 (MB)", round(avg(diff), 2) as "abs(D1 − D2) (MB)",
       round(avg(util), 3) as utilisation, round(avg(conv), 1) as "convergence (s)",
       count(conv) as "converged reps", round(avg(rtt), 1) as "mean srtt (ms)",
       round(avg(lost), 0) as "retransmissions / lost packets"
from r group by all order by loss, arm
"""


def table(root: Path) -> str:
    out: list[str] = []
    s2 = root / "s2-bufferbloat-kernel"
    if s2.is_dir():
        out += ["### S2 kernel TCP", "", *markdown_frame(query(s2, S2)), ""]
    arms = [root / d for d in ("s3-tcp-cubic", "s3-tcp-vegas", "s3-quic") if any((root / d).rglob("summary.parquet"))]
    if arms:
        s3 = pd.concat([query(d, S3) for d in arms], ignore_index=True).sort_values(["loss", "arm"])
        out += ["### S3", "", *markdown_frame(s3), ""]
    if not out:
        raise TableError(f"{root}: no s2-bufferbloat-kernel or s3-* sweep with catalogues")
    return "\n".join(out)
