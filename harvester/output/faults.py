"""TEST ONLY: fault-injection points at each step of a run's close.

In: the name of a step (``STEPS``) as the close reaches it, and the environment
variable ``HARVESTER_TEST_FAULT``. Out: nothing, or this process killed with
SIGKILL when the variable names that step, as ``kill -9`` would at that moment.
Tests (``tests/integration/test_close_steps.py``) run ``harvester run`` with it
and check that the next run loses and repeats no record whatever step it died at.
"""

from __future__ import annotations

import os
import signal

__all__ = ["FAULT_ENV", "STEPS", "fault_point"]

FAULT_ENV = "HARVESTER_TEST_FAULT"

# The steps of a completing run's close, in order (writer.Writer.close, shards.run_job).
STEPS = (
    "committed",  # the last state commit: records synced, state says which
    "prepared",  # the whole output durable under its temporary name (Parquet: assembled)
    "publishing",  # the state says the run is publishing
    "renamed",  # the output renamed to its final name, the directory not yet synced
    "published",  # the directory synced (Parquet: its parts removed)
    "hosts",  # the per-host report published
    "report",  # the run report written
    "complete",  # the state says the run is complete
)


def fault_point(step: str) -> None:
    """SIGKILL this process here if ``HARVESTER_TEST_FAULT`` names ``step``."""
    if os.environ.get(FAULT_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)
