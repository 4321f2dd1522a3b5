"""Where the project's built binaries and the run registry live."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# Records of live runs, so `tlab clean` can find what a killed run left behind.
RUN_REGISTRY = Path(os.environ.get("TLAB_RUN_REGISTRY", "/run/tlab"))


def binary(name: str) -> Path:
    """A binary built by `cargo build --release` (override the folder with TLAB_BIN_DIR)."""
    folder = Path(os.environ.get("TLAB_BIN_DIR", PROJECT_ROOT / "target" / "release"))
    path = folder / name
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: build it with `cargo build --release` in {PROJECT_ROOT}")
    return path
