"""Sweeps on a Dask cluster: each planned run (a point's repetition) goes to a worker,
which executes it in its own namespaces into a temporary folder and sends the folder
back as a gzipped tar; the client unpacks it into the run's place in the local results
folder and analyses it there (metrics, catalogue row, report), so the results are laid
out, named and seeded exactly as a local run's. Runs already DONE are never sent (an
interrupted cluster sweep resumes like a local one).

Emulated runs measure time, so a worker runs one at a time: each task needs one unit of
the worker resource `machine` (`dask worker ADDRESS --nthreads 1 --resources machine=1`
on every machine with the lab set up, as root). `--cluster local` starts a LocalCluster of
`--workers` processes on this machine, each with `machine=1` (runs then share this
machine's cores: fewer workers than cores, or results lose accuracy). A worker lost
mid-run costs that run only: Dask gives the task to another worker; a task that still
fails is reported as a failed run with the error."""

from __future__ import annotations

import io
import json
import pickle
import secrets
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import asdict, replace
from pathlib import Path

from transportlab.plan.runs import PlannedRun
from transportlab.run.execute import AgentFailure, execute
from transportlab.run.record import scenario_record

MACHINE = "machine"  # the worker resource one emulated run occupies
RETRIES = 1  # a task whose run raised is tried once more (a lost worker is Dask's own retry)
CONNECT_TIMEOUT = "30s"
RUN_SPEC = "run.pickle"  # the planned run, handed to the run's own process
FAILURES = "failures.json"  # beside it: the agents' failures the process found


class ClusterError(RuntimeError):
    pass


def execute_packed(run: PlannedRun) -> tuple[bytes, list[dict]]:
    """On a worker: executes the run into a temporary folder and returns it as gzipped
    tar bytes, with the agents' failures (as dicts). The run executes in a process of its
    own (`python -m transportlab.cluster`): a Dask task runs in a worker thread, and a run
    tears its network down on SIGTERM, which only a process's main thread can handle."""
    with tempfile.TemporaryDirectory(prefix="tlab-cluster-") as tmp:
        here = replace(run, run_dir=Path(tmp) / "run")
        spec = Path(tmp) / RUN_SPEC
        spec.write_bytes(pickle.dumps(here))
        res = subprocess.run([sys.executable, "-m", "transportlab.cluster", str(spec)], capture_output=True, text=True)
        if res.returncode != 0:
            tail = " / ".join(res.stderr.strip().splitlines()[-3:]) or "(no message)"
            raise ClusterError(f"the run's process exited {res.returncode}: {tail}")
        failures = json.loads((Path(tmp) / FAILURES).read_text())
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            tar.add(here.run_dir, arcname=".")
        return buf.getvalue(), failures


def main(argv: list[str]) -> int:
    """`python -m transportlab.cluster RUN_SPEC`: executes the pickled planned run and
    writes its agents' failures as JSON beside the spec."""
    spec = Path(argv[0])
    run: PlannedRun = pickle.loads(spec.read_bytes())
    run_id = secrets.token_hex(3)
    failures = execute(run, run_id, scenario_record(run, run_id))
    (spec.parent / FAILURES).write_text(json.dumps([asdict(f) for f in failures]))
    return 0


def unpack(run: PlannedRun, blob: bytes) -> None:
    """Puts a worker's run folder where the run belongs (replacing an unfinished attempt)."""
    if run.run_dir.exists():
        shutil.rmtree(run.run_dir)
    run.run_dir.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        tar.extractall(run.run_dir, filter="data")


def _client(address: str, workers: int | None):
    from dask.distributed import Client, LocalCluster

    if address == "local":
        cluster = LocalCluster(
            n_workers=workers or 1,
            threads_per_worker=1,
            processes=True,
            resources={MACHINE: 1},
            dashboard_address=None,
        )
        return Client(cluster), cluster
    if workers is not None:
        raise ClusterError("--workers is for --cluster local; a remote cluster has the workers it was started with")
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT)
    except OSError as e:
        raise ClusterError(f"cannot reach the Dask scheduler at {address}: {e}") from None
    have = [w for w in client.scheduler_info()["workers"].values() if w.get("resources", {}).get(MACHINE)]
    if not have:
        client.close()
        raise ClusterError(
            f"no worker of the scheduler at {address} offers the resource `{MACHINE}`: start workers with "
            f"`dask worker {address} --nthreads 1 --resources {MACHINE}=1`"
        )
    return client, None


def run_on_cluster(
    runs: Sequence[PlannedRun], address: str, workers: int | None = None
) -> Iterator[tuple[PlannedRun, list[AgentFailure] | BaseException]]:
    """Runs each planned run on the cluster; yields, as each one comes back, the run with
    its agents' failures (its folder already unpacked in place), or with the error its
    task ended with (a failure of the run itself, e.g. the network could not be built)."""
    if not runs:
        return
    from dask.distributed import as_completed

    client, cluster = _client(address, workers)
    try:
        futures = {
            client.submit(
                execute_packed,
                run,
                key=f"tlab-run-{secrets.token_hex(6)}",
                pure=False,
                resources={MACHINE: 1},
                retries=RETRIES,
            ): run
            for run in runs
        }
        for future in as_completed(futures):
            run = futures[future]
            try:
                blob, failures = future.result()
            except Exception as e:  # noqa: BLE001 - the task's error is this run's failure
                yield run, e
                continue
            unpack(run, blob)
            yield run, [AgentFailure(**f) for f in failures]
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
