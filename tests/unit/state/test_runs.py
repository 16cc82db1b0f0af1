"""The run's values: where the state file of an output is."""

from __future__ import annotations

from harvester.state.runs import default_state_path


def test_default_path_sits_beside_the_output() -> None:
    assert default_state_path("out/urls.jsonl") == "out/urls.jsonl.state.sqlite"
    assert default_state_path("-") is None
