"""The `tlab` command."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from transportlab.locations import PROJECT_ROOT

DEFAULT_OUT = Path("results")
DEMO_SCENARIO = PROJECT_ROOT / "scenarios" / "demo.toml"


def _scenario_errors(fn):
    """Bad scenarios: one clear message, exit status 2, no traceback, nothing created."""

    def wrapped(args) -> int:
        from transportlab.artefacts.rundir import RunDirError
        from transportlab.network.live import NetworkError
        from transportlab.pipeline import DiskSpaceLow, RunsFailed
        from transportlab.scenario import ScenarioError, format_error

        try:
            return fn(args)
        except ScenarioError as e:
            print(format_error(e), file=sys.stderr)
            return 2
        # A network that cannot be built (a bad TLAB_* setting, no root): torn down by then.
        except (RunDirError, RunsFailed, NetworkError, DiskSpaceLow) as e:
            print(f"tlab: {e}", file=sys.stderr)
            return 1

    return wrapped


@_scenario_errors
def _cmd_run(args) -> int:
    from transportlab.cluster import ClusterError
    from transportlab.pipeline import run_scenario

    cluster, workers = getattr(args, "cluster", None), getattr(args, "workers", None)
    if workers is not None and cluster is None:
        cluster = "local"
    if workers is not None and workers < 1:
        print(f"tlab run: --workers must be at least 1, got {workers}", file=sys.stderr)
        return 2
    if cluster is not None and getattr(args, "simulate", False):
        print("tlab run: --cluster runs emulated runs; --simulate runs here (drop one of them)", file=sys.stderr)
        return 2
    both = getattr(args, "both", False)
    if both and getattr(args, "simulate", False):
        print("tlab run: --both runs it emulated and simulated; drop --simulate", file=sys.stderr)
        return 2
    outcomes = []
    try:
        for simulated in (False, True) if both else (getattr(args, "simulate", False),):
            outcomes.append(
                run_scenario(
                    Path(args.scenario),
                    Path(args.out),
                    args.set,
                    progress=not args.quiet,
                    smoke_s=getattr(args, "smoke", None),
                    simulated=simulated,
                    cluster=None if simulated else cluster,
                    workers=None if simulated else workers,
                )
            )
    except ClusterError as e:
        print(f"tlab run: {e}", file=sys.stderr)
        return 2
    for outcome in outcomes:
        _print_outcome(outcome)
    if both and not any(o.failed for o in outcomes):
        from transportlab.report.compare import render_compare

        emulated, simulated_ = (o.sweep_dir for o in outcomes)
        out = emulated.parent / f"{emulated.name}-both"
        report = render_compare([emulated, simulated_], out)
        agreement = out / "agreement.txt"
        if agreement.exists():
            print(agreement.read_text(), end="")
        print(f"emulated vs simulated: {report}")
    return 1 if any(o.failed for o in outcomes) else 0


def _print_outcome(outcome) -> None:
    from transportlab.artefacts.rundir import RunDir

    failed = {f.run_dir for f in outcome.failed}
    for d in outcome.run_dirs:
        if d in failed:
            continue
        m = RunDir(d).metrics
        flows = ", ".join(f"{n} {f.throughput_bps / 1e6:.2f} Mbit/s" for n, f in m.flows.items())
        warn = f"  UNINTENDED DROPS: {m.unintended_drops}" if m.unintended_drops else ""
        print(f"{d}: {flows}{warn}")
    if outcome.report.exists():
        print(f"report: {outcome.report.resolve()}")
    for f in outcome.failed:
        print(f.line(), file=sys.stderr)
    if outcome.failed:
        print(
            f"tlab run: {len(outcome.failed)} of {len(outcome.run_dirs)} run(s) failed; run again to retry them",
            file=sys.stderr,
        )


@_scenario_errors
def _cmd_study(args) -> int:
    """Every run of a study not yet done, under one design, then the study report."""
    from transportlab.cluster import ClusterError
    from transportlab.study import load_study
    from transportlab.study.run import run_study

    cluster, workers = args.cluster, args.workers
    if workers is not None and cluster is None:
        cluster = "local"
    if workers is not None and workers < 1:
        print(f"tlab study: --workers must be at least 1, got {workers}", file=sys.stderr)
        return 2
    if cluster is not None and args.simulate:
        print("tlab study: --cluster runs emulated runs; --simulate runs here (drop one of them)", file=sys.stderr)
        return 2
    study = load_study(args.folder)
    design = args.design or study.default_design
    if args.status:
        from transportlab.study.run import check_named, plan_study
        from transportlab.study.status import status_table

        check_named(study, args.experiment or ())
        plans = plan_study(study, Path(args.out), design, args.smoke, args.simulate)
        plans = [p for p in plans if not args.experiment or p.experiment.name in args.experiment]
        print(f"{study.name}, design {design}" + (" (simulated)" if args.simulate else ""))
        print(status_table(plans))
        return 0

    def announce(p) -> None:
        if not args.quiet:
            d = p.design
            print(f"{study.name} · {p.experiment.name} ({p.experiment.file}): {len(p.done)}/{len(p.runs)} runs done"
                  f" (design {design}: repetitions {d.repetitions or 'as the file'}, thin {d.thin})")  # fmt: skip

    try:
        outcome = run_study(
            study,
            Path(args.out),
            design,
            only=args.experiment or (),
            smoke=args.smoke,
            simulated=args.simulate,
            cluster=cluster,
            workers=workers,
            progress=not args.quiet,
            report_only=args.report_only,
            on_experiment=announce,
        )
    except ClusterError as e:
        print(f"tlab study: {e}", file=sys.stderr)
        return 2
    for p in outcome.plans:
        # With --experiment, what the other experiments cannot run is the report's to say.
        if p.not_run and (not args.experiment or p.experiment.name in args.experiment):
            print(f"{p.experiment.name}: {p.not_run}", file=sys.stderr)
    for f in outcome.failed:
        print(f.line(), file=sys.stderr)
    print(f"study report: {outcome.report.resolve()}")
    if outcome.failed:
        print(f"tlab study: {len(outcome.failed)} run(s) failed; run again to retry them", file=sys.stderr)
        return 1
    return 0


def _cmd_demo(args) -> int:
    args.scenario, args.set = str(DEMO_SCENARIO), []
    return _cmd_run(args)


def _cmd_report(args) -> int:
    """Recomputes metrics, catalogue rows, plots and reports from raw artefacts."""
    from transportlab.pipeline import analyse
    from transportlab.report import render_sweep

    d = Path(args.dir)
    runs = sorted(p.parent.parent for p in d.glob("**/raw/t0_ns") if not (p.parent / "failures.json").exists())
    if not runs:
        print(f"tlab report: no runs (raw/t0_ns) under {d}", file=sys.stderr)
        return 2
    reports = [analyse(r) for r in runs]
    print(reports[0] if len(runs) == 1 else render_sweep(d, runs))
    return 0


def _cmd_compare(args) -> int:
    """Several runs or sweeps side by side in one report."""
    from transportlab.report.compare import CompareError, render_compare

    try:
        report = render_compare(args.dirs, args.out)
    except CompareError as e:
        print(f"tlab compare: {e}", file=sys.stderr)
        return 2
    agreement = Path(args.out) / "agreement.txt"
    if agreement.exists():
        print(agreement.read_text(), end="")
    print(report)
    return 0


def _cmd_query(args) -> int:
    import pandas as pd

    from transportlab.artefacts.catalogue import query

    with pd.option_context("display.max_rows", 200, "display.max_columns", None, "display.width", 250):
        print(query(Path(args.dir), args.sql))
    return 0


@_scenario_errors
def _cmd_table(args) -> int:
    """Prints one of the results tables (`transportlab.report.tables`) in Markdown."""
    from transportlab.report.tables import (
        TableError,
        bpf,
        convergence,
        hol,
        ledbat_yield,
        phases,
        quic_losses,
        records,
        web,
        window,
        workloads,
    )

    make = {
        "records": lambda: records.table(Path(args.dir)),
        "hol": lambda: hol.table(Path(args.dir)),
        "web": lambda: web.table(Path(args.dir)),
        "workloads": lambda: workloads.KINDS[args.kind](Path(args.dir)),
        "bpf": lambda: bpf.table(Path(args.dir)),
        "quic-losses": lambda: quic_losses.table(Path(args.dir)),
        "window": lambda: window.table(Path(args.dir), args.settle),
        "phases": lambda: phases.table(Path(args.dir), args.phases),
        "convergence": lambda: convergence.table([Path(d) for d in args.dirs], args.bin),
        "yield": lambda: ledbat_yield.table(Path(args.dir), args.base_rtt),
    }[args.table]
    try:
        print(make())
    except (TableError, ValueError) as e:
        print(f"tlab table {args.table}: {e}", file=sys.stderr)
        return 2
    return 0


def _cmd_pcap(args) -> int:
    """Lists a run's capture, or extracts one direction's packets to a file of its own."""
    from transportlab.artefacts.pcapng import PcapngError, extract, read

    path = Path(args.run) / "raw" / "capture.pcapng"
    if not path.is_file():
        print(f"tlab pcap: {path} does not exist: the scenario had no `capture` table", file=sys.stderr)
        return 2
    try:
        if args.direction:
            out = Path(args.out or f"{args.direction}.pcapng")
            n = extract(path, args.direction, out)
            print(f"{out}: {n} packets of {args.direction}")
            return 0
        for itf in read(path):
            span = (itf.last_ns - itf.first_ns) / 1e9 if itf.first_ns is not None and itf.last_ns is not None else 0.0
            print(f"{itf.name}: {itf.packets} packets, {itf.original_bytes} bytes, {span:.3f} s, snaplen {itf.snaplen}")
    except PcapngError as e:
        print(f"tlab pcap: {e}", file=sys.stderr)
        return 2
    print(f"{path} (open it in Wireshark or tshark; --direction NAME --out FILE extracts one direction)")
    return 0


def _cmd_clean(args) -> int:
    from transportlab.network.clean import clean

    done = clean()
    for line in done:
        print(line)
    print(f"tlab clean: {len(done)} item(s) removed" if done else "tlab clean: nothing to clean")
    return 0


def _cmd_validate(args) -> int:
    import time

    from transportlab.fidelity.validate import PARTS, validate

    out = (
        Path(args.out)
        if args.out
        else DEFAULT_OUT / "validate" / f"{time.strftime('%Y%m%d-%H%M%S')}-{'quick' if args.quick else 'full'}"
    )
    ok = validate(out, quick=args.quick, parts=args.part or list(PARTS))
    print(f"tlab validate: {'all PASS' if ok else 'FAIL'} (runs in {out})")
    return 0 if ok else 1


def _cmd_doctor(args) -> int:
    from transportlab.network.doctor import run_checks

    checks = run_checks()
    for c in checks:
        print(f"[{'ok' if c.ok else 'MISSING'}] {c.name}: {c.detail}")
    return 0 if all(c.ok for c in checks) else 1


def _param_value(text: str) -> int | float | str:
    for parse in (int, float):
        try:
            return parse(text)
        except ValueError:
            pass
    return text


def _cmd_bpf(args) -> int:
    from transportlab.network import kernel_cc

    try:
        if args.action == "load":
            params = {}
            for item in args.params:
                key, sep, value = item.partition("=")
                if not sep or not key:
                    print(f"tlab bpf load: {item!r} is not KEY=VALUE", file=sys.stderr)
                    return 2
                params[key] = _param_value(value)
            print(kernel_cc.load(args.name, args.controller, params))
        elif args.action == "unload":
            if not kernel_cc.unload(args.name):
                print(f"tlab bpf unload: {args.name} was not loaded", file=sys.stderr)
                return 1
        else:
            for name in kernel_cc.loaded():
                print(name)
    except kernel_cc.KernelCcError as e:
        print(f"tlab bpf: {e}", file=sys.stderr)
        return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tlab", description="transportlab: transport protocols on an emulated network")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run a scenario file (all sweep points and repetitions)")
    run.add_argument("scenario")
    for sp in (run, demo := sub.add_parser("demo", help="run the default scenario and print where its report is")):
        sp.add_argument("--out", default=str(DEFAULT_OUT), help="results folder (default: results/)")
        sp.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="PATH=VALUE",
        help="override a field, e.g. links.bottleneck.forward.rate=5Mbit",
    )
    run.add_argument(
        "--smoke",
        type=float,
        nargs="?",
        const=5.0,
        metavar="SECONDS",
        help="try the file: its first sweep point once, every time in it (and the bytes and counts that end its flows and probes) scaled into SECONDS (default 5)",
    )
    run.add_argument(
        "--simulate",
        action="store_true",
        help="run it in the simulator (virtual time, tlab-sim) instead of the emulated network, into OUT/simulated/",
    )
    run.add_argument(
        "--both",
        action="store_true",
        help="run it emulated and simulated, then compare the two in OUT/<name>-both/report.html",
    )
    run.add_argument(
        "--cluster",
        metavar="ADDRESS",
        help="run the sweep's runs on a Dask cluster: a scheduler address (workers started with "
        "`--nthreads 1 --resources machine=1`), or `local` for worker processes on this machine",
    )
    run.add_argument(
        "--workers", type=int, metavar="N", help="with --cluster local (implied): N local worker processes (default 1)"
    )
    run.set_defaults(func=_cmd_run)
    demo.set_defaults(func=_cmd_demo)
    st = sub.add_parser("study", help="run a study folder (its study.toml): every run not yet done, then its report")
    st.add_argument("folder", help="a study folder, e.g. scenarios/s3 (holding study.toml)")
    st.add_argument("--design", help="the design to run at (study.toml's [designs]; default: its default_design)")
    st.add_argument(
        "--experiment",
        action="append",
        metavar="NAME",
        help="run only this experiment (repeatable); the report shows all",
    )
    st.add_argument(
        "--out", default=str(DEFAULT_OUT), help="results folder (default: results/); the study in OUT/<name>/"
    )
    st.add_argument("--quiet", action="store_true", help="no progress bars")
    st.add_argument("--smoke", action="store_true", help="every experiment once, its first point, shortened to 3 s")
    st.add_argument("--simulate", action="store_true", help="in the simulator; experiments it cannot run are listed")
    st.add_argument("--cluster", metavar="ADDRESS", help="as `tlab run --cluster`")
    st.add_argument("--workers", type=int, metavar="N", help="with --cluster local (implied): N local worker processes")
    runs_nothing = st.add_mutually_exclusive_group()
    runs_nothing.add_argument(
        "--report-only", action="store_true", help="run nothing: (re)write the study report from done runs"
    )
    runs_nothing.add_argument(
        "--status", action="store_true", help="run nothing: print each experiment's planned, done and left runs"
    )
    st.set_defaults(func=_cmd_study)
    rep = sub.add_parser("report", help="(re)compute plots and report of a run or sweep folder")
    rep.add_argument("dir")
    rep.set_defaults(func=_cmd_report)
    cmp = sub.add_parser("compare", help="several runs or sweeps side by side in one HTML report")
    cmp.add_argument("dirs", nargs="+", metavar="RUN_OR_SWEEP_DIR")
    cmp.add_argument("--out", required=True, help="folder for report.html and plots/")
    cmp.set_defaults(func=_cmd_compare)
    q = sub.add_parser("query", help="SQL over the run catalogue (a view named `runs`)")
    q.add_argument("dir")
    q.add_argument("sql")
    q.set_defaults(func=_cmd_query)
    val = sub.add_parser(
        "validate", help="run the S0 E0 emulator validation and check the fidelity targets (docs/architecture.md)"
    )
    val.add_argument("--quick", action="store_true", help="fewer points, probes and packets (under 3 minutes)")
    val.add_argument("--out", help="results folder (default: results/validate/<time>-<quick|full>)")
    val.add_argument(
        "--part",
        action="append",
        choices=["delay", "jitter", "loss", "queue", "bandwidth"],
        help="run only this part (repeatable; default: all)",
    )
    val.set_defaults(func=_cmd_validate)
    tab = sub.add_parser("table", help="print a results table of finished runs (Markdown, as docs/results-*.md quote)")
    tables = tab.add_subparsers(dest="table", required=True)
    for name, what in (
        ("records", "records sweep (s2 hol): per run records, latency, share late by ≥ 1 RTT"),
        ("hol", "s2 hol TCP arms: where the lateness came from (packet log)"),
        ("web", "s2 web: page time, object time to first byte and completion per run"),
        ("bpf", "bpf/RESULTS.md: S2 kernel TCP and S3 from the catalogues"),
        ("quic-losses", "QUIC flows' declared losses by the receiver's arrival order: packet or time threshold"),
    ):
        tables.add_parser(name, help=what).add_argument("dir", metavar="FOLDER")
    wn = tables.add_parser(
        "window", help="TCP and QUIC flows' congestion window: first cut, cuts, median window and sRTT"
    )
    wn.add_argument("dir", metavar="FOLDER")
    wn.add_argument(
        "--settle", type=float, default=5.0, metavar="SECONDS", help="medians from this time on (default 5)"
    )
    wl = tables.add_parser("workloads", help="s2 voip, streaming, cpu or hol-bulk workloads per run")
    wl.add_argument("kind", choices=["voip", "streaming", "cpu", "hol-bulk"])
    wl.add_argument("dir", metavar="FOLDER")
    ph = tables.add_parser("phases", help="a run's flows' throughput and probes' RTT per phase (S0 E5)")
    ph.add_argument("dir", metavar="RUN_DIR")
    ph.add_argument("phases", nargs="+", metavar="NAME=START:END", help="times from the run's time 0, e.g. b1=8s:13s")
    cv = tables.add_parser("convergence", help="S3: seconds from the join to the two flows' first crossing, per run")
    cv.add_argument("dirs", nargs="+", metavar="FOLDER")
    cv.add_argument(
        "--bin", type=float, metavar="SECONDS", help="throughput bin width (default 1, as the S3 files' analysis.bin)"
    )
    yl = tables.add_parser("yield", help="S0 E5: the uTP flow's fall in each burst against LEDBAT's rule")
    yl.add_argument("dir", metavar="FOLDER")
    yl.add_argument("--base-rtt", type=float, metavar="MS", help="the path's base RTT (default 100, S0 E5's)")
    tab.set_defaults(func=_cmd_table)
    pc = sub.add_parser("pcap", help="list a run's pcapng capture, or extract one link direction's packets")
    pc.add_argument("run", help="a run directory (holding raw/capture.pcapng)")
    pc.add_argument("--direction", help="extract this direction (e.g. bottleneck.forward)")
    pc.add_argument("--out", help="file to extract into (default: DIRECTION.pcapng)")
    pc.set_defaults(func=_cmd_pcap)
    sub.add_parser("clean", help="remove what killed runs left behind").set_defaults(func=_cmd_clean)
    sub.add_parser("doctor", help="check that this machine can run experiments").set_defaults(func=_cmd_doctor)
    bpf = sub.add_parser("bpf", help="the lab's BPF TCP congestion controls by hand (docs/bpf.md)")
    bpf_sub = bpf.add_subparsers(dest="action", required=True)
    load = bpf_sub.add_parser("load", help="register CONTROLLER as NAME with KEY=VALUE parameters; prints its pin")
    load.add_argument("name", help="kernel name: tlab…, at most 15 characters")
    load.add_argument("controller", help="vegas or delay-correlation")
    load.add_argument("params", nargs="*", metavar="KEY=VALUE")
    unload = bpf_sub.add_parser("unload", help="unregister NAME (remove its pin)")
    unload.add_argument("name")
    bpf_sub.add_parser("list", help="the instances pinned by transportlab")
    bpf.set_defaults(func=_cmd_bpf)
    return p


# Exit status after Ctrl-C or SIGTERM (the shell's 128 + SIGINT).
INTERRUPTED = 130


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    restore = _interrupt_on_sigterm()
    try:
        # Libraries' warnings (matplotlib's tight-layout warning, NumPy's runtime
        # warnings) do not reach the user's console; `-W` or PYTHONWARNINGS shows them.
        with warnings.catch_warnings():
            if not sys.warnoptions:
                warnings.simplefilter("ignore")
            return args.func(args)
    except KeyboardInterrupt as e:
        from transportlab.pipeline import Interrupted

        # Everything a run built is torn down by then (`Network` tears down on any exit);
        # what follows must not be interrupted again.
        _ignore_interrupts()
        message = str(e) if isinstance(e, Interrupted) else "interrupted"
        print(f"tlab {args.command}: {message}", file=sys.stderr)
        return INTERRUPTED
    finally:
        restore()


def _interrupt_on_sigterm():
    """SIGTERM and Ctrl-C alike raise KeyboardInterrupt in the main thread, once: a second
    one while the first is being handled (teardown) is ignored, so teardown finishes.
    Returns a function restoring the previous handlers."""
    import os
    import signal

    pid = os.getpid()
    old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}

    def handler(signum, frame):
        # Forked helpers (pyroute2 forks inside namespaces) inherit this handler: they
        # just exit, they must not unwind a copy of the parent's stack.
        if os.getpid() != pid:
            os._exit(128 + signum)
        _ignore_interrupts()
        raise KeyboardInterrupt

    for s in old:
        signal.signal(s, handler)

    def restore() -> None:
        for s, h in old.items():
            signal.signal(s, h)

    return restore


def _ignore_interrupts() -> None:
    import signal

    for s in (signal.SIGINT, signal.SIGTERM):
        signal.signal(s, signal.SIG_IGN)
