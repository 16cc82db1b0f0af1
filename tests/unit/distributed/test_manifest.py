"""The distributed run's files without Dask: layout, seed files, manifest commit, sweep.

Real files in a temp directory; the race of two attempts runs them in two processes
that publish the same manifest at the same instant (a barrier), many times over.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from harvester.distributed.layout import Layout, open_layout, read_layout, seed_line, split_seeds
from harvester.distributed.manifest import Attempt, committed, latest_manifest, sweep
from harvester.errors import ConfigError
from harvester.run.seeds import parse_seed, shard_of

if TYPE_CHECKING:
    from multiprocessing.synchronize import Barrier


@pytest.mark.parametrize(
    "line",
    [
        "example.com",
        "Example.COM:8080",
        "https://example.com",
        "http://example.com:81",
        "https://example.com/robots.txt",
        "https://example.com/sitemaps/a.xml.gz?x=1",
        "xn--bcher-kva.example",
        "http://[::1]:8080",
    ],
)
def test_a_seed_line_parses_back_into_the_same_seed(line: str) -> None:
    seed = parse_seed(line, 7)
    again = parse_seed(seed_line(seed), 7)
    assert again == seed


def test_the_shard_count_is_fixed_by_the_first_run(tmp_path: Path) -> None:
    root = str(tmp_path / "out")
    first = open_layout(root, 6, "host")
    assert (first.shards, first.run) == (6, 1)
    second = open_layout(root, 0, "host")  # 0: what the directory has
    assert (second.shards, second.run) == (6, 2)
    assert read_layout(root) == second
    with pytest.raises(ConfigError, match="cut into 6 shards") as info:
        open_layout(root, 7, "host")
    assert info.value.key == "distributed.shards"
    with pytest.raises(ConfigError, match="shards by host"):
        open_layout(root, 6, "domain")
    with pytest.raises(ConfigError, match="at least 1"):
        open_layout(str(tmp_path / "new"), 0, "host")
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "harvester.json").write_text("[1, 2]")
    with pytest.raises(ConfigError, match="not a harvester layout file"):
        read_layout(str(tmp_path / "bad"))


def test_seeds_are_cut_into_one_file_per_shard(tmp_path: Path) -> None:
    layout = open_layout(str(tmp_path), 4, "host")
    hosts = [f"host{i}.example" for i in range(40)]
    lines = [*hosts, "host3.example", "bad host!", "https://host5.example/s.xml", "# comment"]
    split = split_seeds(lines, layout)
    assert (split.invalid, split.duplicates, sum(split.per_shard)) == (1, 1, 41)
    for shard in range(4):
        text = Path(layout.seeds_path(shard)).read_text().split()
        assert len(text) == split.per_shard[shard]
        for line in text:
            assert shard_of(parse_seed(line).host, 4) == shard
    assert not [n for n in os.listdir(tmp_path / "seeds") if n.endswith(".part")]


def test_any_shard_count_is_cut_with_a_few_open_files(tmp_path: Path) -> None:
    # 5,000 shards under a 64-file limit (a process's own limit is 1,024 by default):
    # the cut must not hold a file per shard. A small buffer makes it write out
    # mid-input too, so the appends after the first write are checked as well.
    program = (
        "import resource, sys\n"
        "from harvester.distributed import layout as L\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))\n"
        "L._CUT_BUFFER = 50_000\n"
        "out = L.open_layout(sys.argv[1], 5000, 'host')\n"
        "split = L.split_seeds((f'host{i}.example' for i in range(20_000)), out)\n"
        "print(sum(split.per_shard), sum(1 for n in split.per_shard if n))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    total, used = map(int, done.stdout.split())
    assert total == 20_000
    layout = read_layout(str(tmp_path))
    assert layout is not None
    seen = 0
    for shard in range(5000):
        names = Path(layout.seeds_path(shard)).read_text().split()
        assert all(shard_of(name, 5000) == shard for name in names)
        seen += len(names)
    assert seen == 20_000
    assert used > 4000  # most shards got hosts, so most files were written more than once
    assert not [n for n in os.listdir(tmp_path / "seeds") if n.endswith(".part")]


def test_a_stale_part_file_from_an_interrupted_cut_is_not_appended_to(tmp_path: Path) -> None:
    layout = open_layout(str(tmp_path), 2, "host")
    for shard in range(2):
        Path(layout.seeds_path(shard) + ".part").write_text("stale.example\n")
    split_seeds(["a.example", "b.example", "c.example"], layout)
    cut = [Path(layout.seeds_path(n)).read_text().split() for n in range(2)]
    assert sorted(cut[0] + cut[1]) == ["a.example", "b.example", "c.example"]


def test_shard_by_domain_keeps_a_sites_subdomains_together(tmp_path: Path) -> None:
    layout = open_layout(str(tmp_path), 8, "domain")
    lines = [f"{sub}.site{i}.co.uk" for i in range(10) for sub in ("www", "cdn", "news")]
    split_seeds(lines, layout)
    for shard in range(8):
        names = Path(layout.seeds_path(shard)).read_text().split()
        sites = {name.split(".", 1)[1] for name in names}
        for site in sites:  # every subdomain of a site in this one shard
            assert {f"{s}.{site}" for s in ("www", "cdn", "news")} <= set(names)


def _attempt_files(attempt: Attempt) -> dict[str, str | None]:
    for path in (attempt.records, attempt.hosts, attempt.report):
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(f'{{"attempt": "{attempt.token}"}}\n')
    return {
        "attempt": attempt.token,
        "records": os.path.basename(attempt.records),
        "hosts": os.path.basename(attempt.hosts),
        "report": os.path.basename(attempt.report),
        "state": None,
    }


def test_the_first_commit_wins_and_a_late_attempt_deletes_its_files(tmp_path: Path) -> None:
    layout = open_layout(str(tmp_path), 2, "host")
    one, two = Attempt.new(layout, 1), Attempt.new(layout, 1)
    assert one.token != two.token
    first, second = _attempt_files(one), _attempt_files(two)
    assert one.commit(first) is True
    assert two.commit(second) is False
    assert two.own_files() == []  # discarded
    assert latest_manifest(layout, 1) == first
    assert [s for s, _ in committed(layout)] == [1]
    names = {"MANIFEST.r1.json", first["records"], first["hosts"], first["report"]}
    assert set(os.listdir(layout.shard_dir(1))) == names


def test_sweep_keeps_only_what_the_newest_manifest_names(tmp_path: Path) -> None:
    root = str(tmp_path)
    run1 = open_layout(root, 1, "host")
    old = Attempt.new(run1, 0)
    assert old.commit(_attempt_files(old))
    run2 = open_layout(root, 0, "host")
    killed = Attempt.new(run2, 0)  # a killed attempt: files, no manifest
    _attempt_files(killed)
    with open(killed.records + ".part", "w", encoding="utf-8") as fh:
        fh.write("half a line")
    # Run 2 has not committed shard 0: run 1's commit (its state) stays.
    removed = sweep(run2, 0)
    assert len(removed) == 4
    assert killed.own_files() == []
    assert len(old.own_files()) == 3
    new = Attempt.new(run2, 0)
    assert new.commit(_attempt_files(new))
    sweep(run2, 0)
    assert old.own_files() == []
    assert sorted(os.listdir(run2.shard_dir(0)))[0] == "MANIFEST.r2.json"
    assert len(os.listdir(run2.shard_dir(0))) == 4


def _race(root: str, barrier: Barrier, results: multiprocessing.Queue[bool]) -> None:
    layout = read_layout(root)
    assert layout is not None
    attempt = Attempt.new(layout, 0)
    files = _attempt_files(attempt)
    barrier.wait()
    results.put(attempt.commit(files))


def test_two_attempts_publishing_one_manifest_at_once_exactly_one_wins(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    for round_ in range(10):
        root = str(tmp_path / f"r{round_}")
        layout = open_layout(root, 1, "host")
        barrier = ctx.Barrier(2)
        results: multiprocessing.Queue[bool] = ctx.Queue()
        procs = [ctx.Process(target=_race, args=(root, barrier, results)) for _ in range(2)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(10)
        assert sorted([results.get(timeout=5), results.get(timeout=5)]) == [False, True]
        manifest = latest_manifest(layout, 0)
        assert manifest is not None
        # The winner's files are whole and the only attempt files left.
        names = set(os.listdir(layout.shard_dir(0)))
        assert names == {
            "MANIFEST.r1.json",
            manifest["records"],
            manifest["hosts"],
            manifest["report"],
        }
        records = json.loads(Path(layout.shard_dir(0), manifest["records"]).read_text())
        assert records == {"attempt": manifest["attempt"]}
        results.close()


def test_neither_import_harvester_nor_a_normal_run_imports_dask(tmp_path: Path) -> None:
    program = (
        "import sys, harvester\n"
        "from harvester.cli import main\n"
        "status = main(['run', 'http://127.0.0.1:9/', '-o', sys.argv[1], '--no-progress',"
        " '--allow-private', '--retries', '0', '--no-state'])\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed'))\n"
        "print(status, loaded)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, str(tmp_path / "urls.jsonl")],
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )
    assert done.stdout.strip() == "0 []", done.stderr
    assert (tmp_path / "urls.jsonl").exists()


def test_layout_paths(tmp_path: Path) -> None:
    layout = Layout(str(tmp_path), 3, "host", 4)
    assert layout.manifest_path(2).endswith(os.path.join("shards", "00002", "MANIFEST.r4.json"))
    assert layout.seeds_path(1).endswith(os.path.join("seeds", "00001.txt"))


def test_merge_concatenates_committed_shards_in_order_and_only_after_success(
    tmp_path: Path,
) -> None:
    from harvester.distributed.merge import merge
    from harvester.errors import InputError

    layout = open_layout(str(tmp_path / "out"), 3, "host")
    expected = b""
    for shard in (2, 0):  # committed out of order; shard 1 never commits
        attempt = Attempt.new(layout, shard)
        files = _attempt_files(attempt)
        # Over a megabyte, lines of odd lengths: the copy must cut at line ends only.
        lines = [b'{"url": "%d-%d-%s"}\n' % (shard, i, b"x" * (i % 97)) for i in range(30_000)]
        Path(attempt.records).write_bytes(b"".join(lines))
        assert attempt.commit(files)
    for shard in (0, 2):
        manifest = latest_manifest(layout, shard)
        assert manifest is not None
        expected += Path(layout.shard_dir(shard), manifest["records"]).read_bytes()
    assert len(expected) > 2 << 20
    with pytest.raises(InputError, match="has not finished"):
        merge(layout, str(tmp_path / "all.jsonl"))
    Path(layout.success_path).touch()
    assert merge(layout, str(tmp_path / "all.jsonl")) == len(expected)
    assert (tmp_path / "all.jsonl").read_bytes() == expected


def test_the_fingerprint_log_reads_back_what_the_tracker_was_given(tmp_path: Path) -> None:
    from array import array

    from harvester.config import DedupeConfig
    from harvester.distributed.fingerprints import FingerprintLog, read_fingerprints

    log = FingerprintLog(DedupeConfig(), str(tmp_path / "a.fps"))
    batches = [("a.example", array("Q", [1, 2, 3])), ("b.example:8080", array("Q", [3, 4]))]
    log.add(*batches[0])
    log.add(batches[1][0], batches[1][1].tobytes())  # the writer hands bytes
    # Logged, not counted: the client counts over every shard's log (3 was listed twice).
    assert log.take("b.example:8080") == 0
    log.close()
    assert list(read_fingerprints(str(tmp_path / "a.fps"))) == [
        (host, fps.tobytes()) for host, fps in batches
    ]
    data = (tmp_path / "a.fps").read_bytes()
    (tmp_path / "cut.fps").write_bytes(data[:-3])
    with pytest.raises(ValueError, match=r"cut\.fps: fingerprint log ends inside a frame"):
        list(read_fingerprints(str(tmp_path / "cut.fps")))
