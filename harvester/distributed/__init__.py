"""Shards on Dask distributed: a run over many machines, each shard committed exactly once.

May import: ``run`` (a shard is a one-worker run), ``output``, ``crawl``, ``state``,
``audit``, ``reader``, ``urls`` and the ground floor. It sits beside ``view/``.

In: a Dask ``Client``, the seeds (a file on storage every worker reads, or lines the
client writes there), an output directory on that shared storage and the config.
Out: per shard, the committed files its ``MANIFEST`` names; ``out/_SUCCESS`` and
``out/report.json`` once every shard committed or failed (``client.run_distributed``).

Layout of an output directory (``layout.py``)::

    out/harvester.json              shard count, shard key, run counter (fixed on run 1)
    out/seeds/NNNNN.txt             this run's seeds of shard NNNNN (cut by the client)
    out/shards/NNNNN/ATTEMPT.*      one attempt's records, host reports, report, state
    out/shards/NNNNN/MANIFEST.rK.json  run K's commit of shard NNNNN (first writer wins)
    out/_SUCCESS  out/report.json   written by the client at the end of run K

Choices, and why:

1. One Dask task per shard (``client.map``, ``pure=False``, a key per run and shard,
   ``as_completed``). The task is the existing one-process run (``shards.run_job``
   with one worker: its event loop in the Dask worker's thread, no process of its
   own), so the distributed path runs the very shard loop the process pool runs.
2. Hosts never travel through the scheduler: the client reads the seeds once and
   cuts them into one file per shard (one pass over the input instead of every
   task parsing all of it; one file open at a time, whatever the shard count), and
   each task reads its own file.
3. Records never travel through Dask either: each attempt writes files named after
   itself, fsyncs them and commits by ``os.link``-ing a finished manifest to the
   run's manifest name (``manifest.py``). ``link`` fails with ``EEXIST`` when another
   attempt committed first; that attempt's files stay, this one deletes its own and
   says "duplicate attempt discarded". Readers use only files a manifest names;
   everything else (a killed attempt's files) is swept at the end of the run and at
   the start of the next.
4. State per shard: the task copies the shard's committed SQLite file to local
   disk (SQLite must not be written over a network filesystem), runs there, and
   publishes the new file as part of its commit. A failed attempt never publishes,
   so the state a shard starts from is always that of a committed attempt
   (``state.resume`` is off: nothing unfinished is ever committed to resume).
5. Cross-host duplicates need every record: each shard logs its records' URL
   fingerprints (``fingerprints.py``, 8 bytes a URL, not counted there) and the client
   counts them over the committed logs as the shards commit (``merge.py``).
6. Ctrl-C: the client sets a Dask ``Event`` that each shard polls; a set event is
   the shard's graceful ``Stop``.

7. ``--scheduler local``: the LocalCluster's workers are forked from a forkserver
   that imported Dask and the shard's modules while the client imported Dask
   (``forkserver.py``), and each worker's objects from before its first shard are
   frozen out of the garbage collector's sight (``task.py``), as the pool's workers do.
8. A worker's shard attempts run on one event loop with one host admission, and a
   shard steps aside (Dask's ``secede``) once it has taken its last seed, so its
   slowest hosts finish beside the worker's next shard instead of the shards' tails
   running one after another. A worker's death then takes every attempt in it along;
   a shard Dask gives up on (``KilledWorker``) gets one more attempt, alone in its
   process, so only the shard at fault ends failed (``occupancy.py``).

Nothing here imports Dask at ``import harvester`` (a test checks): only
``client.py``, ``task.py`` and ``cluster.py`` do (``forkserver.py``'s server, in its
own process), and only when a distributed run starts.
"""

from __future__ import annotations

__all__: list[str] = []
