"""The uTP implementations and the per-flow parameters each exposes: the one list the
flow kind checks scenario files against and the agent maps onto the implementation's
own settings."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Parameter:
    name: str  # the key in a flow's cc_params
    setting: str  # the implementation's own name for it
    unit: str
    default: int
    min: int
    max: int
    meaning: str


# libtorrent's uTP (libtorrent-rasterbar 2.x, `settings_pack`); values are integers.
LIBTORRENT_PARAMETERS: dict[str, Parameter] = {
    p.name: p
    for p in (
        Parameter("target", "utp_target_delay", "ms", 100, 1, 10_000, "LEDBAT target queueing delay"),
        Parameter("gain", "utp_gain_factor", "bytes", 3000, 1, 1_000_000, "window growth per RTT at zero delay"),
        Parameter("loss_multiplier", "utp_loss_multiplier", "%", 50, 1, 100, "window kept on a loss (percent of cwnd)"),
        Parameter(
            "cwnd_reduce_timer", "utp_cwnd_reduce_timer", "ms", 100, 0, 10_000, "at most one loss cut per interval"
        ),
    )
}

# Implementations a utp flow may name, with their parameters; None: not built here yet
# (the kind refuses it when the file is read, saying so).
IMPLEMENTATIONS: dict[str, dict[str, Parameter] | None] = {
    "libtorrent": LIBTORRENT_PARAMETERS,
    "libutp": None,
}
