"""The runner's network settings read from the environment: a bad value is one clear
line naming the variable and the value, never a traceback, and nothing is built."""

from __future__ import annotations

import os

import pytest

from tlab_cli import tlab
from transportlab.locations import PROJECT_ROOT
from transportlab.network.live import NetworkError, _warm_us


def test_warm_up_interval_takes_microseconds_zero_or_more():
    assert _warm_us("0") == 0.0 and _warm_us("5000") == 5000.0 and _warm_us("1e3") == 1000.0
    for bad in ("-1", "nan", "inf", "5ms", ""):
        with pytest.raises(NetworkError, match="TLAB_WARM_US"):
            _warm_us(bad)


def test_a_bad_warm_up_interval_ends_tlab_run_with_one_line(tmp_path):
    res = tlab(
        "run",
        PROJECT_ROOT / "scenarios" / "demo.toml",
        "--smoke",
        "--quiet",
        "--out",
        tmp_path,
        env=os.environ | {"TLAB_WARM_US": "abc"},
        timeout=60,
    )
    assert res.returncode == 1, res.stderr
    assert "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines()[-1] == (
        "tlab: TLAB_WARM_US must be a number of µs, 0 or more (0: no warm-up frames), not 'abc'"
    )
    assert not list(tmp_path.glob("**/DONE"))
