"""Host admission: how many hosts a shard harvests at once, from what the process can afford.

In: the shard's live measures, sampled every ``POLL`` seconds by ``watch``: the
process's resident memory (``/proc/self/statm``), the event loop's lag (how
late a periodic timer fires), how busy the loop's thread is (``CpuMeter``: the
share of wall time it ran or waited for a core, and its moving average), how
long the output was behind (``Results.blocked``) and how many requests wait for
a connection (``Fetcher.queued``). Out: ``Admission.may_admit()``, which the
shard's feeder (``pipeline.run_shard``) asks before it takes the next seed. It is
the one bound on a shard's hosts in flight.

Why not a fixed count: a host spends most of its life waiting (its politeness
delay, the network), and a waiting host costs little memory and no CPU, so a
fixed count either leaves the process idle or cannot protect it from a run of
big hosts. ``run.hosts_in_flight`` is an upper bound (0 = ``auto_limit``: what
the file-descriptor limit allows), and within it:

* **ceiling**: hosts admitted at most right now. Each sample: RSS over
  ``run.memory_budget`` and still growing → it shrinks to 7/8 of the hosts in
  flight; the loop busy at ``run.max_cpu`` or more on average, the output behind
  half the time on average, or requests queued for a connection in half the
  recent samples → it shrinks by 1/16, not below ``START``; over budget, the loop
  lagging more than ``run.max_loop_lag``, busy in the last interval, the output
  behind for a tenth of it, or any request queued → it holds at the hosts in
  flight; else, when the ceiling is what holds the hosts back and ``SETTLE``
  seconds passed since it last grew, it grows by half (at least 16), up to the bound.
* **why it waits to grow again**: a host just admitted spends its first few
  hundred milliseconds on DNS, the connect, TLS and the server's latency, using
  no CPU; growing at every idle sample admitted hosts before the last ones had
  shown what they cost, and the ceiling swung widely.
* **why the loop's busy share**: a host in flight helps only while the loop waits
  on the network. Once the loop always has work, another host adds only its
  memory; so one busy interval stops the growth, and a loop busy for a while
  drains the hosts in flight slowly towards the fewest that keep it busy. The
  floor (``START``) keeps a loop slowed by something else from draining to nothing.
* **why the output and the connections**: while the writer is behind, the hosts
  wait to send and the loop looks idle; growing then admits hosts that only wait
  longer, each holding its memory and its keep-alive connection. Likewise while
  every connection slot is held (aiohttp takes one before it resolves the name),
  new hosts only queue. (benchmarks/README.md, "Figures that were in
  admission.py's docstring", has what the realweb showed of each.)
* **between samples**, each host admitted beyond those at the last sample counts
  ``HOST_ESTIMATE`` bytes against the budget, so a burst cannot overshoot it.
* **start** at ``START`` and grow from there; **progress**: with no host in
  flight one is always admitted.

One owner (the shard's feeder); transitions are plain ``def``s without ``await``.

Example::

    admission = Admission(auto_limit(cfg.fetch.max_connections), memory_budget=512 << 20)
    if admission.may_admit():
        admission.admitted()  # ... start the host; when it ends:
    admission.released()
"""

from __future__ import annotations

import asyncio
import contextlib
import resource
import time
from typing import TYPE_CHECKING, TypeVar

from harvester.run.meters import SMOOTHING, CpuMeter, read_rss
from harvester.run.shutdown import POLL

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from harvester.config import Config

__all__ = [
    "HOST_ESTIMATE",
    "OUTPUT_HOLD",
    "OUTPUT_SHRINK",
    "QUEUE_SHRINK",
    "SETTLE",
    "START",
    "Admission",
    "CpuMeter",
    "admitted",
    "auto_limit",
    "for_run",
    "host_limit",
    "read_rss",
    "stop_watching",
    "watch",
]

T = TypeVar("T")  # the seed type (the admission only counts them)

# Bytes a newly admitted host is assumed to add until a sample measures it: a host
# starting holds a request, its robots.txt and soon a parser (a waiting one, < 20 KB).
HOST_ESTIMATE = 256 * 1024
# File descriptors a host may hold beyond the shared connection limit: an idle pooled
# keep-alive connection (not counted by aiohttp's limit) and a dedupe spill file.
_FDS_PER_HOST = 2
_FD_RESERVE = 64  # for the state file, pipes, the resolver, logs
AUTO_MAX = 8192  # the auto bound's cap (beyond it memory, not descriptors, is the limit)
_GROWTH_MIN = 16  # hosts a good sample adds to the ceiling at least
# Seconds after a growth before the ceiling may grow again (module docstring).
SETTLE = 0.5
# Shares of a sample's interval with the output behind that hold the ceiling, and (on
# average) shrink it (module docstring).
OUTPUT_HOLD = 0.1
OUTPUT_SHRINK = 0.5
# The share of recent samples with requests queued for a connection that shrinks it.
QUEUE_SHRINK = 0.5
# The ceiling at the start: the shard grows from here as samples allow (by half each
# POLL), so a loop already busy at its start never takes thousands of hosts at once.
START = 64


def auto_limit(max_connections: int, nofile: int | None = None) -> int:
    """The hosts in flight the descriptor limit allows (``run.hosts_in_flight = 0``).

    ``nofile``: the soft ``RLIMIT_NOFILE`` (read when None). Connections are bounded
    by ``max_connections``; each host may hold ``_FDS_PER_HOST`` more.

    >>> auto_limit(256, nofile=1024)
    352
    """
    if nofile is None:
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        if nofile == resource.RLIM_INFINITY:
            nofile = 1 << 20
    spare = nofile - max_connections - _FD_RESERVE
    return max(1, min(AUTO_MAX, spare // _FDS_PER_HOST))


def host_limit(cfg: Config) -> int:
    """``run.hosts_in_flight`` resolved: the configured bound, or ``auto_limit`` for 0."""
    if cfg.run.hosts_in_flight > 0:
        return cfg.run.hosts_in_flight
    return auto_limit(cfg.fetch.max_connections)


def for_run(cfg: Config, clock: Callable[[], float]) -> Admission:
    """The admission of a run's shard with ``cfg``'s bounds (``run.hosts_in_flight``,
    ``run.memory_budget``, ``run.max_loop_lag``, ``run.max_cpu``), timed by ``clock``."""
    return Admission(
        host_limit(cfg),
        memory_budget=cfg.run.memory_budget,
        max_lag=cfg.run.max_loop_lag,
        max_cpu=cfg.run.max_cpu,
        clock=clock,
    )


class Admission:
    """Whether another host may start; see the module docstring for the rules.

    ``limit``: the upper bound; ``memory_budget``: bytes of RSS (0: no check);
    ``max_lag``: seconds of loop lag (0: no check); ``max_cpu``: the CPU share
    (``CpuMeter``) that holds the ceiling and, sustained, shrinks it (0: no check);
    ``clock``: for the times in ``repr`` and ``settle`` (the loop's or
    ``time.monotonic``; tests pass a fake); ``settle``: seconds between two growths.

    >>> a = Admission(2)
    >>> a.may_admit()
    True
    >>> a.admitted(); a.admitted(); a.may_admit()
    False
    """

    def __init__(
        self,
        limit: int,
        *,
        memory_budget: int = 0,
        max_lag: float = 0.0,
        max_cpu: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
        estimate: int = HOST_ESTIMATE,
        settle: float = SETTLE,
    ) -> None:
        self.limit = max(1, limit)
        self.memory_budget = memory_budget
        self.max_lag = max_lag
        self.max_cpu = max_cpu
        self._clock = clock
        self._estimate = estimate
        self._settle = settle
        self._grown_at: float | None = None  # clock time of the last growth (None: never)
        self.in_flight = 0  # hosts admitted and not released
        self.ceiling = min(self.limit, START)  # hosts admitted at most now (module docstring)
        self.peak = 0  # most hosts in flight at once
        self.admitted_total = 0  # hosts admitted so far
        self.rss = 0  # bytes, at the last sample (0: none yet)
        self.lag = 0.0  # seconds, at the last sample
        self.cpu = 0.0  # the CPU share (CpuMeter) of the last interval
        self.cpu_avg = 0.0  # its moving average, at the last sample
        self.output = 0.0  # the share of the last interval the output was behind
        self.output_avg = 0.0  # its moving average, at the last sample
        self.queued = 0  # requests queued for a connection, at the last sample
        self.queued_avg = 0.0  # the moving average of samples with any (1) or none (0)
        self.holds: dict[str, int] = {}  # samples that held or cut the ceiling, by reason
        self.sampled_at: float | None = None  # clock time of the last sample
        self._at_sample = 0  # in_flight at the last sample (growth since counts the estimate)
        self.held = ""  # why the ceiling was last held or cut ("memory", "lag", "cpu"), or ""

    def __repr__(self) -> str:
        age = "never" if self.sampled_at is None else f"{self._clock() - self.sampled_at:.2f}s ago"
        return (
            f"<Admission in_flight={self.in_flight} ceiling={self.ceiling} limit={self.limit}"
            f" peak={self.peak} admitted={self.admitted_total} rss={self.rss >> 20}MiB"
            f"/{self.memory_budget >> 20}MiB lag={self.lag * 1000:.0f}ms"
            f"/{self.max_lag * 1000:.0f}ms cpu={self.cpu:.2f}(avg {self.cpu_avg:.2f})"
            f"/{self.max_cpu:.2f} output={self.output:.2f}(avg {self.output_avg:.2f})"
            f" queued={self.queued}(avg {self.queued_avg:.2f})"
            f" held={self.held or '-'} sampled={age}>"
        )

    def may_admit(self) -> bool:
        """Whether a host may start now (one always may when none is in flight)."""
        if self.in_flight == 0:
            return True
        if self.in_flight >= self.ceiling:
            return False
        growth = self.in_flight - self._at_sample
        return not (
            self.memory_budget
            and growth >= 0
            and self.rss + (growth + 1) * self._estimate > self.memory_budget
        )

    def admitted(self) -> None:
        """A host started (asked ``may_admit`` first; an overshoot of one is allowed)."""
        self.in_flight += 1
        self.admitted_total += 1
        self.peak = max(self.peak, self.in_flight)

    def released(self) -> None:
        """A host ended."""
        self.in_flight -= 1

    def observe(
        self,
        rss: int,
        lag: float,
        cpu: float = 0.0,
        cpu_avg: float = 0.0,
        output: float = 0.0,
        output_avg: float = 0.0,
        queued: int = 0,
        queued_avg: float = 0.0,
    ) -> None:
        """A sample: the RSS in bytes, the loop's lag in seconds, the CPU share of the
        last interval (``CpuMeter.sample``) and its average (``CpuMeter.share``), the
        share of the interval the output was behind and its average, the requests
        queued for a connection and the share of recent samples with any; moves the
        ceiling."""
        over = bool(self.memory_budget) and rss > self.memory_budget
        growing = rss > self.rss
        lagging = bool(self.max_lag) and lag > self.max_lag
        # Why the ceiling holds now, and (sustained) why it shrinks; in this order.
        holds = {
            "memory": over,
            "lag": lagging,
            "cpu": bool(self.max_cpu) and cpu >= self.max_cpu,
            "output": output >= OUTPUT_HOLD,
            "connections": queued > 0,
        }
        shrinks = {
            "cpu": bool(self.max_cpu) and cpu_avg >= self.max_cpu,
            "output": output_avg >= OUTPUT_SHRINK,
            "connections": queued_avg >= QUEUE_SHRINK,
        }
        shrink = next((why for why, yes in shrinks.items() if yes), "")
        hold = next((why for why, yes in holds.items() if yes), shrink)
        if over and growing:
            self.ceiling = max(1, self.in_flight - self.in_flight // 8)
            self.held = "memory"
        elif shrink and self.in_flight > START:
            self.ceiling = max(START, self.in_flight - max(1, self.in_flight // 16))
            self.held = shrink
        elif hold:
            self.ceiling = max(1, min(self.ceiling, self.in_flight))
            self.held = hold
        else:
            self.held = ""
            now = self._clock()
            binding = self.in_flight >= self.ceiling - max(1, self.ceiling // 16)
            settled = self._grown_at is None or now - self._grown_at >= self._settle
            if binding and settled:
                self.ceiling = min(self.limit, self.ceiling + max(_GROWTH_MIN, self.ceiling // 2))
                self._grown_at = now
        if self.held:
            self.holds[self.held] = self.holds.get(self.held, 0) + 1
        self.rss, self.lag, self.cpu, self.cpu_avg = rss, lag, cpu, cpu_avg
        self.output, self.output_avg = output, output_avg
        self.queued, self.queued_avg = queued, queued_avg
        self._at_sample = self.in_flight
        self.sampled_at = self._clock()


async def watch(
    admission: Admission,
    changed: asyncio.Event,
    *,
    rss: Callable[[], int] = read_rss,
    cpu: CpuMeter | None = None,
    blocked: Callable[[], float] | None = None,
    queued: Callable[[], int] | None = None,
    interval: float = POLL,
) -> None:
    """Sample RSS, loop lag, CPU and output into ``admission`` every ``interval``
    seconds; runs until cancelled. ``changed`` is set after each sample (the feeder
    may admit again).

    Lag: how much later than asked a sleep of ``interval`` returns; a loop busy
    parsing (or starved of the CPU) runs its timers late. ``cpu``: the meter (a new
    ``CpuMeter`` when None). ``blocked``: loop seconds so far that the output was
    behind (``Results.blocked``; None: never), made a share of each interval.
    ``queued``: requests waiting for a connection now (``Fetcher.queued``; None: none).
    """
    loop = asyncio.get_running_loop()
    meter = cpu if cpu is not None else CpuMeter()
    admission.observe(rss(), 0.0)  # the memory at the start (before the first host)
    was_blocked = blocked() if blocked is not None else 0.0
    output_avg = queued_avg = 0.0
    while True:
        start = loop.time()
        await asyncio.sleep(interval)
        elapsed = loop.time() - start
        lag = max(0.0, elapsed - interval)
        cpu_now = meter.sample()
        output = 0.0
        if blocked is not None:
            now_blocked = blocked()
            output = min(1.0, (now_blocked - was_blocked) / elapsed) if elapsed > 0 else 0.0
            was_blocked = now_blocked
            output_avg += SMOOTHING * (output - output_avg)
        waiting = queued() if queued is not None else 0
        queued_avg += SMOOTHING * ((1.0 if waiting else 0.0) - queued_avg)
        admission.observe(rss(), lag, cpu_now, meter.share, output, output_avg, waiting, queued_avg)
        changed.set()


async def admitted(
    seeds: AsyncIterator[T], admission: Admission, changed: asyncio.Event
) -> AsyncIterator[T]:
    """Yield each seed of ``seeds`` once ``admission`` lets a host start, counted admitted.

    Order matters: the admission is asked first, then the next seed taken (a source
    like ``shutdown.seed_gate`` checks its stop flag then, right before the host starts).
    The caller starts a host for each seed yielded and calls ``released()`` (then
    ``changed.set()``) when it ends.
    """
    source = aiter(seeds)
    while True:
        while not admission.may_admit():
            changed.clear()
            await changed.wait()
        seed = await anext(source, None)
        if seed is None:
            return
        admission.admitted()
        yield seed


async def stop_watching(task: asyncio.Task[None]) -> None:
    """Cancel a ``watch`` task and wait for it to end."""
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
