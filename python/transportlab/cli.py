"""The `tlab` command."""

from __future__ import annotations

import argparse
import sys


def _cmd_clean(args) -> int:
    from .clean import clean

    done = clean()
    for line in done:
        print(line)
    print(f"tlab clean: {len(done)} item(s) removed" if done else "tlab clean: nothing to clean")
    return 0


def _cmd_doctor(args) -> int:
    from .doctor import run_checks

    checks = run_checks()
    for c in checks:
        print(f"[{'ok' if c.ok else 'MISSING'}] {c.name}: {c.detail}")
    return 0 if all(c.ok for c in checks) else 1


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tlab", description="transportlab: transport protocols on an emulated network")
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("clean", help="remove what killed runs left behind").set_defaults(func=_cmd_clean)
    sub.add_parser("doctor", help="check that this machine can run experiments").set_defaults(func=_cmd_doctor)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
