"""How shard attempts share a worker process (harvester.distributed.occupancy), with threads."""

from __future__ import annotations

import asyncio
import gc
import threading
from typing import TYPE_CHECKING

import pytest

from harvester.config import Config
from harvester.distributed.occupancy import Occupancy

if TYPE_CHECKING:
    from collections.abc import Callable

WAIT = 5.0  # seconds a test waits for a thread it expects to move (a failure, not a hang)


def _attempt(
    occupancy: Occupancy, alone: bool, log: list[str], name: str
) -> tuple[threading.Thread, threading.Event, threading.Event]:
    """A thread that enters ``occupancy``, says so, and leaves when told."""
    entered, leave = threading.Event(), threading.Event()

    def run() -> None:
        with occupancy.attempt(Config(), alone):
            log.append(f"{name} in")
            entered.set()
            leave.wait(WAIT)
            log.append(f"{name} out")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, entered, leave


def _until(condition: Callable[[], bool]) -> None:
    deadline = threading.Event()
    for _ in range(int(WAIT / 0.01)):
        if condition():
            return
        deadline.wait(0.01)
    raise AssertionError("the condition never held")


def test_attempts_not_alone_run_side_by_side() -> None:
    occupancy, log = Occupancy(), list[str]()
    first, first_in, first_leave = _attempt(occupancy, False, log, "a")
    second, second_in, second_leave = _attempt(occupancy, False, log, "b")
    assert first_in.wait(WAIT)
    assert second_in.wait(WAIT)
    assert occupancy.running == 2
    first_leave.set()
    second_leave.set()
    first.join(WAIT)
    second.join(WAIT)
    assert occupancy.running == 0


def test_an_alone_attempt_waits_for_those_running_and_keeps_new_ones_out() -> None:
    occupancy, log = Occupancy(), list[str]()
    tail, tail_in, tail_leave = _attempt(occupancy, False, log, "tail")
    assert tail_in.wait(WAIT)
    alone, alone_in, alone_leave = _attempt(occupancy, True, log, "alone")
    _until(lambda: occupancy.waiting_alone == 1)
    later, later_in, later_leave = _attempt(occupancy, False, log, "later")
    assert not alone_in.wait(0.2)  # the tail still runs
    assert not later_in.is_set()  # an alone attempt waits: nothing new goes first
    tail_leave.set()
    assert alone_in.wait(WAIT)
    assert not later_in.wait(0.2)  # the alone attempt runs: nothing beside it
    alone_leave.set()
    assert later_in.wait(WAIT)
    later_leave.set()
    for thread in (tail, alone, later):
        thread.join(WAIT)
    assert log == ["tail in", "tail out", "alone in", "alone out", "later in", "later out"]
    assert (occupancy.running, occupancy.alone, occupancy.waiting_alone) == (0, False, 0)


def test_two_alone_attempts_run_one_after_the_other() -> None:
    occupancy, log = Occupancy(), list[str]()
    first, first_in, first_leave = _attempt(occupancy, True, log, "a")
    assert first_in.wait(WAIT)
    second, second_in, second_leave = _attempt(occupancy, True, log, "b")
    assert not second_in.wait(0.2)
    first_leave.set()
    assert second_in.wait(WAIT)
    second_leave.set()
    first.join(WAIT)
    second.join(WAIT)
    assert log == ["a in", "a out", "b in", "b out"]


def test_an_attempt_that_raises_leaves_the_process_to_the_others() -> None:
    occupancy = Occupancy()
    try:
        with occupancy.attempt(Config(), True):
            raise RuntimeError("the shard failed")
    except RuntimeError:
        pass
    assert (occupancy.running, occupancy.alone) == (0, False)
    with occupancy.attempt(Config(), False):
        assert occupancy.running == 1


def test_the_gc_threshold_is_raised_while_any_attempt_runs_and_restored_after_the_last() -> None:
    occupancy, log = Occupancy(), list[str]()
    before = gc.get_threshold()
    try:
        first, first_in, first_leave = _attempt(occupancy, False, log, "a")
        assert first_in.wait(WAIT)
        second, second_in, second_leave = _attempt(occupancy, False, log, "b")
        assert second_in.wait(WAIT)
        assert gc.get_threshold()[0] == 10_000
        first_leave.set()
        first.join(WAIT)
        assert gc.get_threshold()[0] == 10_000  # the other still runs
        second_leave.set()
        second.join(WAIT)
        assert gc.get_threshold() == before
    finally:
        gc.set_threshold(*before)


def test_attempts_run_their_coroutines_on_one_shard_loop_thread_not_the_callers() -> None:
    occupancy = Occupancy()
    seen: list[tuple[str, int]] = []

    async def shard(name: str) -> None:
        seen.append((threading.current_thread().name, id(asyncio.get_running_loop())))

    for name in ("a", "b"):
        with occupancy.attempt(Config(), False) as attempt:
            attempt.run(shard(name))
    assert {s[0] for s in seen} == {"harvester-shard-loop"}
    assert len({s[1] for s in seen}) == 1  # one loop for both


def test_an_attempt_s_run_raises_what_its_coroutine_raised() -> None:
    occupancy = Occupancy()

    async def shard() -> None:
        raise ValueError("a broken shard")

    with occupancy.attempt(Config(), False) as attempt, pytest.raises(ValueError, match="broken"):
        attempt.run(shard())
    with occupancy.attempt(Config(), False) as attempt:  # the loop runs on for the next one
        attempt.run(asyncio.sleep(0))


def test_seeds_are_marked_taken_only_after_the_last_line() -> None:
    with Occupancy().attempt(Config(), False) as attempt:
        lines = attempt.seeds(iter(["a.example", "b.example"]))
        assert next(lines) == "a.example"
        assert next(lines) == "b.example"
        assert not attempt.taken.is_set()
        assert list(lines) == []
        assert attempt.taken.is_set()


def test_a_waiting_attempt_wakes_when_its_seeds_are_taken_and_when_it_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The task's thread sleeps until told (no polling: each wake-up takes the GIL from
    the shard loop): with its periodic look an hour apart, it still secedes once the
    seeds are taken, and returns once the coroutine ended."""
    distributed = pytest.importorskip("distributed")
    monkeypatch.setattr("harvester.distributed.occupancy._LOOK", 3600.0)
    seceded = threading.Event()
    monkeypatch.setattr(distributed, "secede", seceded.set)
    occupancy = Occupancy()

    with occupancy.attempt(Config(), False) as attempt:

        async def shard() -> None:
            assert list(attempt.seeds(iter(["a.example"]))) == ["a.example"]
            for _ in range(int(WAIT / 0.01)):  # ends only once the task's thread seceded
                if seceded.is_set():
                    return
                await asyncio.sleep(0.01)

        task = threading.Thread(target=attempt.run, args=(shard(),), daemon=True)
        task.start()
        task.join(WAIT)
        assert not task.is_alive()
    assert seceded.is_set()
