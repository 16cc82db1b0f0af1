"""Sink stage, object storage: a run's output published to an fsspec URL (``s3://``...).

In: the output URL, the format, the local files a finished run wrote. Out: the
objects under the URL, published the object store's way: an object store has no
rename, so nothing is written there until the run is over; then every data object
is uploaded (each PUT is whole or absent: a reader never sees half an object), and
for a prefix a ``_SUCCESS`` manifest last, naming every object of the output with
its size. A reader trusts what ``_SUCCESS`` names; an output without it is unfinished.

Two kinds of URL:

* a prefix (``s3://bucket/run/``, or no ``.jsonl``/``.csv``/``.parquet`` at its end):
  ``PREFIX/part-00000.FMT`` (one per shard of a distributed run), the report files
  beside them (``report.json``, ``hosts.ndjson``: not taken by a ``*.FMT`` glob), then
  ``PREFIX/_SUCCESS``;
* an object (``s3://bucket/run/urls.parquet``): the report files first
  (``URL.report.json``, ``URL.hosts.ndjson``), the object itself last, one PUT.

The run writes locally first (``stage_dir``: one fixed directory per URL under the
user's cache), streaming as every run does; the same directory on the next run keeps
the state file, so ``--emit delta``, resume and cron runs work as with a local ``-o``.

Needs fsspec and the store's filesystem (``pip install "harvester-sitemaps[s3]"`` for S3).
Credentials and endpoint come from the store's usual sources (for S3: the
``AWS_*`` environment variables, ``~/.aws``; ``AWS_ENDPOINT_URL`` for a
non-AWS endpoint).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from harvester.errors import ConfigError
from harvester.version import install_hint

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = ["SUCCESS", "Remote", "is_remote", "remote_target", "stage_dir", "storage_options"]

SUCCESS = "_SUCCESS"
_URL = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*)://")
_EXTENSIONS = (".jsonl", ".csv", ".parquet")


def is_remote(output: str) -> bool:
    """Whether ``output`` is an fsspec URL (``s3://``, ``gs://``...; not ``file://``)."""
    m = _URL.match(output)
    return m is not None and m.group(1).lower() != "file"


def stage_dir(url: str) -> str:
    """The local directory a run to ``url`` writes in before it uploads (kept: it holds
    the state file of the next run); ``HARVESTER_STAGE_DIR`` moves the root."""
    root = os.environ.get("HARVESTER_STAGE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "harvester", "stage"
    )
    digest = hashlib.blake2b(url.encode(), digest_size=8).hexdigest()
    return os.path.join(root, digest)


def storage_options(url: str) -> dict[str, Any]:
    """fsspec options for ``url``: for S3, ``AWS_ENDPOINT_URL`` as the client's endpoint
    (s3fs releases that do not read it from the environment themselves)."""
    endpoint = os.environ.get("AWS_ENDPOINT_URL")
    if url.lower().startswith(("s3://", "s3a://")) and endpoint:
        return {"client_kwargs": {"endpoint_url": endpoint}}
    return {}


@dataclass(frozen=True, slots=True)
class Remote:
    """An output URL: a prefix (a dataset of parts and ``_SUCCESS``) or one object."""

    url: str
    prefix: bool

    def key(self, name: str) -> str:
        """The URL of ``name`` in the prefix, or beside the object (``URL.name``)."""
        if self.prefix:
            return self.url.rstrip("/") + "/" + name
        return f"{self.url}.{name}"

    def publish(self, data: Iterable[tuple[str, str]], extra: Iterable[tuple[str, str]]) -> None:
        """Upload the run's files: ``data`` (local path, name) are the records, ``extra``
        the report files; then commit (module docstring). Raises ``OSError`` (the output
        then stays unfinished: no ``_SUCCESS``, or no object)."""
        fs, _ = _filesystem(self.url)
        if not self.prefix:
            ((local, _),) = list(data)
            for path, name in extra:
                _put(fs, path, self.key(name))
            _put(fs, local, self.url)  # last: the object is the commit
            return
        listed: list[dict[str, Any]] = []
        with_extra = [(p, n, False) for p, n in data] + [(p, n, True) for p, n in extra]
        success = self.key(SUCCESS)
        if fs.exists(success):  # a new run's output: no old _SUCCESS over new parts
            fs.rm_file(success)
        for path, name, side in with_extra:
            _put(fs, path, self.key(name))
            listed.append({"name": name, "bytes": os.path.getsize(path), "records": not side})
        manifest = json.dumps({"objects": listed}, indent=2) + "\n"
        with fs.open(success, "wb") as fh:
            fh.write(manifest.encode())


def remote_target(url: str, fmt: str) -> tuple[Remote, str]:
    """``url`` as a ``Remote``, and the records file's name for the local run (the
    object's own name, or ``part-00000.FMT`` for a prefix)."""
    name = url.rstrip("/").rsplit("/", 1)[-1]
    prefix = url.endswith("/") or not name.lower().endswith(_EXTENSIONS)
    return Remote(url, prefix), (f"part-00000.{fmt}" if prefix else name)


def _filesystem(url: str) -> tuple[Any, str]:
    try:
        import fsspec  # type: ignore[import-untyped]
    except ImportError as exc:
        raise ConfigError(
            f"-o {url} needs fsspec ({exc}): {install_hint('s3')}", key="output"
        ) from exc
    try:
        return fsspec.core.url_to_fs(url, **storage_options(url))  # type: ignore[no-any-return]
    except (ImportError, ValueError) as exc:
        raise ConfigError(
            f"-o {url}: no filesystem for it ({exc}); for S3: {install_hint('s3')}",
            key="output",
        ) from exc


def _put(fs: Any, local: str, url: str) -> None:
    """Upload one file (s3fs: multipart for a large one; whole or absent either way)."""
    fs.put_file(local, url)
