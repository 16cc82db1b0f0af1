"""``runtime.tune_gc``: imports frozen; the gen-0 threshold raised only when asked (workers).

Run in a fresh interpreter: freezing and thresholds are process-wide.
"""

from __future__ import annotations

import json
import subprocess
import sys

PROGRAM = """
import gc, json, sys
from harvester.run.runtime import tune_gc
before = gc.get_freeze_count()
tune_gc(throughput=sys.argv[1] == "throughput") if sys.argv[1] != "plain" else tune_gc()
print(json.dumps({"frozen": gc.get_freeze_count() > before, "threshold": gc.get_threshold()}))
"""


def tuned(mode: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", PROGRAM, mode], capture_output=True, text=True, check=True
    ).stdout
    result: dict[str, object] = json.loads(out)
    return result


def test_a_worker_collects_less_often() -> None:
    assert tuned("throughput") == {"frozen": True, "threshold": [10_000, 10, 10]}


def test_by_default_only_the_imports_are_frozen() -> None:
    assert tuned("plain") == {"frozen": True, "threshold": [700, 10, 10]}
    assert tuned("state") == {"frozen": True, "threshold": [700, 10, 10]}
