"""Throughput per flow over time at one link direction, from the packet log."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from transportlab.artefacts.packetlog import DEPARTURE
from transportlab.metrics._records import col, take
from transportlab.metrics.logflows import Flow, flow_codes, flow_mask


def _bins(t: np.ndarray, bin_ns: int, origin_ns: int, end_ns: int | None) -> tuple[np.ndarray, np.ndarray, int]:
    """Bin index per event (only events inside the binned range kept) and bin count."""
    if bin_ns <= 0:
        raise ValueError(f"bin width must be positive, got {bin_ns} ns")
    t = t.astype(np.int64)
    keep = t >= origin_ns
    if end_ns is not None:
        keep &= t < end_ns
    idx = (t[keep] - origin_ns) // bin_ns
    if end_ns is not None:
        nbins = max(0, -(-(end_ns - origin_ns) // bin_ns))
    else:
        nbins = int(idx.max()) + 1 if len(idx) else 0
    return keep, idx, nbins


def throughput_by_flow(
    records,
    direction: int,
    bin_ns: int,
    origin_ns: int = 0,
    end_ns: int | None = None,
    flows: Mapping[str, Flow] | Sequence[Flow] | None = None,
) -> pd.DataFrame:
    """Throughput of each flow over time at link direction `direction`, in bits/s.

    Definition: the bytes (IP total length, every departure record: retransmissions and
    duplicate copies included, i.e. what the link carried) of the flow's departures from
    `direction` whose time falls in bin k = [origin_ns + k·bin_ns, origin_ns + (k+1)·bin_ns),
    times 8, divided by the bin width in seconds. Departures before `origin_ns` (and at or
    after `end_ns` if given) are ignored. The last bin ends at `end_ns` rounded up to a whole
    bin if given, else it is the bin of the last departure (possibly only partly elapsed).

    Returns a DataFrame indexed by bin start time `t_ns` (int ns), one column per flow,
    values in bits/s (float). Columns are the keys of `flows` if a mapping is given, else
    `str(flow)`; with `flows=None`, every flow departing from `direction` is a column.
    Flows listed but absent give columns of zeros.
    """
    dep = take(records, (col(records, "event") == DEPARTURE) & (col(records, "direction") == direction))
    keep, idx, nbins = _bins(col(dep, "t_ns"), bin_ns, origin_ns, end_ns)
    sizes = col(dep, "size")[keep].astype(np.float64)
    if flows is None:
        codes, fl = flow_codes(take(dep, keep))
        names = [str(f) for f in fl]
    else:
        items = list(flows.items()) if isinstance(flows, Mapping) else [(str(f), f) for f in flows]
        names = [n for n, _ in items]
        kept = take(dep, keep)
        codes = np.full(len(kept), -1, dtype=np.int64)
        for i, (_, f) in enumerate(items):
            codes[flow_mask(kept, f)] = i
        listed = codes >= 0
        codes, idx, sizes = codes[listed], idx[listed], sizes[listed]
    k = len(names)
    total = np.bincount(codes * nbins + idx, weights=sizes, minlength=k * nbins) if nbins else np.zeros(0)
    bps = total.reshape(k, nbins).T * 8.0 / (bin_ns / 1e9)
    index = pd.Index(origin_ns + np.arange(nbins, dtype=np.int64) * bin_ns, name="t_ns")
    return pd.DataFrame(bps, index=index, columns=names)


def throughput(
    records, flow: Flow, direction: int, bin_ns: int, origin_ns: int = 0, end_ns: int | None = None
) -> pd.DataFrame:
    """Throughput of one flow over time at link direction `direction`.

    Same definition as `throughput_by_flow` (departure bytes per bin [origin + k·w,
    origin + (k+1)·w), × 8 / w). Returns columns `t_ns` (bin start, ns), `bytes` (int, IP
    bytes departed in the bin) and `bps` (bits/s, float).
    """
    dep = take(
        records,
        (col(records, "event") == DEPARTURE) & (col(records, "direction") == direction) & flow_mask(records, flow),
    )
    keep, idx, nbins = _bins(col(dep, "t_ns"), bin_ns, origin_ns, end_ns)
    b = (
        np.bincount(idx, weights=col(dep, "size")[keep].astype(np.float64), minlength=nbins)[:nbins]
        if nbins
        else np.zeros(0)
    )
    return pd.DataFrame(
        {
            "t_ns": origin_ns + np.arange(nbins, dtype=np.int64) * bin_ns,
            "bytes": b.astype(np.int64),
            "bps": b * 8.0 / (bin_ns / 1e9),
        }
    )
