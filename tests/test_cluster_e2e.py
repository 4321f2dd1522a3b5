"""A sweep through `tlab run --cluster local` (a Dask LocalCluster on this machine) gives
the runs the plain runner gives: the same folders, seeds and catalogue rows, and the same
impairment decisions (the same UDP datagrams lost); an interrupted cluster sweep resumes."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from scenario_text import flow, link, scenario, table
from tlab_cli import tlab, tlab_ok, write_scenario
from transportlab.artefacts.catalogue import FILE
from transportlab.artefacts.rundir import read_arrow

pytestmark = pytest.mark.netns

SCENARIO = scenario(
    "cluster-check",
    link({"rate": "20Mbit", "delay": "2ms"}, {"delay": "2ms"}, name="l", between=("a", "b")),
    flow("udp", name="cbr", src="a", dst="b", size=500, interval="4ms", count=300),
    table("sweep", {"links.l.forward.loss": ["5%", "20%"]}),
    duration="2s",
    seed=5,
    repetitions=2,
    hosts=["a", "b"],
)
# Catalogue columns that depend only on the plan and the impairment decisions (not on timing).
SAME = ["point", "repetition", "seed", "flow", "bytes_delivered", "loss_rate", "packets_sent_by_data_sender"]


def _run(tmp_path, out, *extra):
    tlab_ok("run", write_scenario(tmp_path, SCENARIO), "--out", out, "--quiet", *extra, timeout=600)
    return out / "cluster-check"


def _rows(sweep) -> pd.DataFrame:
    df = pd.concat([pd.read_parquet(p) for p in sorted(sweep.glob(f"*/rep-*/{FILE}"))], ignore_index=True)
    return df[SAME].sort_values(["point", "repetition", "flow"]).reset_index(drop=True)


def _received(sweep) -> dict[str, list[int]]:
    return {
        str(p.parent.parent.relative_to(sweep)): sorted(read_arrow(p)["seq"].tolist())
        for p in sorted(sweep.glob("*/rep-*/raw/cbr-server.arrow"))
    }


@pytest.fixture(scope="module")
def dask_sweep(tmp_path_factory):
    """The sweep run once through `--cluster local` for the tests below (they copy it
    before changing it)."""
    tmp = tmp_path_factory.mktemp("cluster")
    return _run(tmp, tmp / "dask", "--cluster", "local", "--workers", "1")


def test_cluster_local_matches_the_plain_runner(tmp_path, dask_sweep):
    plain = _run(tmp_path, tmp_path / "plain")
    dask = dask_sweep
    assert sorted(p.relative_to(dask) for p in dask.glob("*/rep-*/DONE")) == sorted(
        p.relative_to(plain) for p in plain.glob("*/rep-*/DONE")
    )
    assert len(list(dask.glob("*/rep-*/DONE"))) == 4
    pd.testing.assert_frame_equal(_rows(dask), _rows(plain))
    received = _received(dask)
    assert received == _received(plain) and len(received) == 4
    assert all(0 < len(v) < 300 for v in received.values())  # some lost, the same ones
    assert (dask / "report.html").is_file()
    # the catalogue names the local folder, not the worker's temporary one
    run_dirs = pd.read_parquet(next(dask.glob(f"*/rep-0/{FILE}")))["run_dir"]
    assert all(str(d).startswith(str(dask)) for d in run_dirs)


def test_cluster_sweep_resumes(tmp_path, dask_sweep):
    sweep = tmp_path / "dask" / dask_sweep.name
    shutil.copytree(dask_sweep, sweep)
    done = sorted(sweep.glob("*/rep-*/DONE"))
    kept = done[0].read_text()
    done[1].unlink()  # as if interrupted before this run was analysed
    (done[1].parent / "metrics.json").unlink()
    _run(tmp_path, tmp_path / "dask", "--workers", "1")  # --workers implies --cluster local
    assert done[0].read_text() == kept  # a finished run is not redone
    assert done[1].is_file() and (done[1].parent / "metrics.json").is_file()


def test_bad_cluster_arguments(tmp_path):
    base = ["run", write_scenario(tmp_path, SCENARIO), "--out", tmp_path / "o", "--quiet"]
    res = tlab(*base, "--workers", "0", timeout=60)
    assert res.returncode == 2 and "--workers must be at least 1" in res.stderr
    res = tlab(*base, "--cluster", "tcp://127.0.0.1:9", "--workers", "2", timeout=60)
    assert res.returncode == 2 and "--workers is for --cluster local" in res.stderr
    assert not list((tmp_path / "o").glob("**/rep-*"))  # refused before any run started
