"""`tlab validate --quick`, loss and queue parts: the emulated network meets docs/architecture.md's
loss and drop-tail fidelity targets (about 35 s)."""

import pytest
from rich.console import Console

from transportlab.fidelity.validate import loss, queue

pytestmark = [pytest.mark.netns, pytest.mark.timing]


def test_loss_within_99_percent_binomial_interval(tmp_path):
    part = loss(tmp_path, quick=True)
    Console(width=170).print(part.table)
    assert part.passed


def test_queue_accepts_exactly_its_limit_from_a_burst(tmp_path):
    part = queue(tmp_path, quick=True)
    Console(width=170).print(part.table)
    assert part.passed
