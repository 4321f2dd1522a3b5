"""Ending a process the lab started: SIGTERM, then SIGKILL after a grace period. Beside the
stages because the runner (`network.live`) and the stack ends (`stacks`), which run in
different layers, both end their children this way."""

from __future__ import annotations

import signal
import subprocess


def terminate(proc: subprocess.Popen, grace: float) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds; only ever a process we started."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
