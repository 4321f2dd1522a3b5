import os

import pytest

from transportlab.locations import binary


def pytest_collection_modifyitems(config, items):
    """End-to-end tests need root (namespaces, TUN) and the built binaries; without them
    they are skipped with the reason, never silently passed."""
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
