"""RTT statistics from a probe agent's series (columns `seq`, `send_ns`, `rtt_ns`)."""

from __future__ import annotations

import numpy as np
import pandas as pd


def probe_rtts(probes: pd.DataFrame) -> np.ndarray:
    """RTTs (ns, float) of the answered probes in sequence order; a probe is lost when
    `rtt_ns` is null/NaN or negative."""
    df = probes.sort_values("seq", kind="stable") if "seq" in probes else probes
    r = pd.to_numeric(df["rtt_ns"], errors="coerce").to_numpy(np.float64, na_value=np.nan)
    return r[~np.isnan(r) & (r >= 0)]


def rtt_stats(probes: pd.DataFrame) -> dict[str, float]:
    """RTT statistics of a probe series, times in ns.

    `sent` = number of probes (rows), `lost` = probes whose `rtt_ns` is null or negative,
    `loss_rate` = lost/sent; over the answered probes: `mean_ns`, `std_ns` (sample standard
    deviation, ddof=1; NaN for one probe), `min_ns`, `max_ns`, `p50_ns`, `p95_ns`, `p99_ns`
    (linear interpolation). Statistics are NaN when no probe was answered.
    """
    r = probe_rtts(probes)
    sent = len(probes)
    nan = float("nan")
    out = {
        "sent": sent,
        "received": int(len(r)),
        "lost": int(sent - len(r)),
        "loss_rate": (sent - len(r)) / sent if sent else nan,
    }
    if len(r):
        p50, p95, p99 = np.percentile(r, [50, 95, 99])
        out.update(
            mean_ns=float(r.mean()),
            std_ns=float(r.std(ddof=1)) if len(r) > 1 else nan,
            min_ns=float(r.min()),
            max_ns=float(r.max()),
            p50_ns=float(p50),
            p95_ns=float(p95),
            p99_ns=float(p99),
        )
    else:
        out.update(mean_ns=nan, std_ns=nan, min_ns=nan, max_ns=nan, p50_ns=nan, p95_ns=nan, p99_ns=nan)
    return out
