import os

import pytest

from transportlab.locations import binary


def _expected_length(item) -> int:
    """0 for the study smoke runs (minutes each), 1 for the other end-to-end tests
    (seconds), 2 for the rest (milliseconds)."""
    if item.path.name == "test_scenarios_smoke.py" and item.originalname == "test_study_smoke_runs":
        return 0
    return 1 if "netns" in item.keywords else 2


def pytest_collection_modifyitems(config, items):
    """Longest first: `make test` hands its two workers one test at a time
    (`--maxschedchunk 1`), so the long ones start early and the workers end together.
    Tests marked `timing` are skipped in a worker of `-n` (with the reason). End-to-end
    tests need root (namespaces, TUN) and the built binaries; without them
    they are skipped with the reason, never silently passed."""
    items.sort(key=_expected_length)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        # Beside another test their delays and rates are not what they measure.
        alone = pytest.mark.skip(reason="a timing test runs one at a time: pytest -m timing (without -n)")
        for item in items:
            if "timing" in item.keywords:
                item.add_marker(alone)
    missing = []
    if os.geteuid() != 0:
        missing.append("root")
    for name in ("tlab-engine", "agent"):
        try:
            binary(name)
        except FileNotFoundError:
            missing.append(name)
    if not missing:
        return
    skip = pytest.mark.skip(reason=f"end-to-end test needs: {', '.join(missing)} (run `make test`)")
    for item in items:
        if "netns" in item.keywords:
            item.add_marker(skip)
