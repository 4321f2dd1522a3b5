"""Why each QUIC flow's sender declared its packets lost (`metrics.quic_losses`), per run,
from both ends' qlogs — emulated runs' and simulated runs' alike:

    tlab table quic-losses RESULTS/s1/s1-pdcp        (a sweep folder, or one run folder)

Columns: packets declared lost; of them, those the receiver got behind ≥ 3 later packets
(packet threshold), those it got behind fewer or in order (time threshold: spurious), those
it never got (real losses); and how late past its 9/8 × RTT deadline each time-threshold
loss was declared (median and 90th percentile, ms). The receiver's qlog gives the arrival
order, so a flow whose ends wrote none (`qlog = false`) is left out."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from transportlab import contract
from transportlab.artefacts.qlog import QlogError, read_traces
from transportlab.artefacts.rundir import RunDir
from transportlab.metrics.quic_losses import loss_causes
from transportlab.report.tables.common import TableError, flows, markdown, run_label, runs_in


def _row(run: RunDir, name: str, flow: dict) -> list[str] | None:
    ends = ("server", "client") if flow.get("direction") == "download" else ("client", "server")
    paths = [run.raw / f"{name}-{end}.sqlog" for end in ends]  # the sender's, the receiver's
    if not all(p.is_file() for p in paths):
        return None
    try:
        sender, receiver = (read_traces(p)[0] for p in paths)
    except (QlogError, IndexError) as e:
        raise TableError(f"{run.raw}: {e}") from None
    # quinn-proto gives RTTs in seconds, where qlog 0.3 and the other stacks give ms.
    scale = 1000.0 if (sender.title or "").startswith(contract.quinn_qlog_title_prefixes()) else 1.0
    c = loss_causes(sender.events, receiver.events, scale)
    late = np.percentile(c.overshoot_ms, [50, 90]) if c.overshoot_ms else None
    return [run_label(run), name, str(c.declared), str(c.packet_threshold), str(c.time_threshold), str(c.never_arrived),
            f"{round(late[0], 3) + 0.0:.3f} / {round(late[1], 3) + 0.0:.3f}" if late is not None else "–"]  # fmt: skip


def table(folder: Path) -> str:
    rows = [
        row
        for run in runs_in(Path(folder))
        for name, flow in flows(run).items()
        if flow.get("protocol") == "quic" and (row := _row(run, name, flow)) is not None
    ]
    if not rows:
        raise TableError(f"{folder}: no QUIC flow with both ends' qlogs")
    head = ["run", "flow", "declared lost", "packet threshold (≥ 3 behind)", "time threshold (< 3 behind)",
            "never arrived", "time threshold's lateness p50 / p90 (ms)"]  # fmt: skip
    return "\n".join(markdown(head, rows))
