"""Download the official TpuGraphs tar files and extract them into the official layout.

URLs (TpuGraphs README, "Dataset")::

    http://download.tensorflow.org/data/tpu_graphs/v0/npz_tile_xla_{split}.tar
    http://download.tensorflow.org/data/tpu_graphs/v0/npz_layout_{source}_{search}_{split}.tar

Each tar holds ``npz/<optimization>/<source>[/<search>]/<split>/*.npz`` and is extracted into
the data root (default ``~/data/tpugraphs``). Downloads go to ``<tar>.part`` and resume from
its size with an HTTP Range request; a tar already present in the root is extracted without any
network access (the offline route: fetch the tars elsewhere, copy them in).

Before anything is extracted the archive is checked (`check_archive`): every header's checksum
(tarfile), every member's data within the file (a truncated download), nothing but regular files
and directories under ``npz/``. Extraction is `tarfile`'s own with ``filter="data"`` (no absolute
paths, ``..``, links or device files), into a temporary directory inside the root; each npz's
CRCs are then tested (`zipfile.ZipFile.testzip`) and only then is it moved into place, so the
root never holds a half-written or damaged file. A ``.<tar>.extracted`` marker makes re-runs skip
finished work.
"""

from __future__ import annotations

import http.client
import os
import socket
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable

from graphcost.data.io.discover import COLLECTIONS, SPLITS, check_collection, check_split, default_data_root
from graphcost.errors import GraphcostError

__all__ = ["BASE_URL", "DownloadError", "tar_name", "tar_url", "download_file", "check_archive", "safe_extract",
           "download_collection"]

BASE_URL = "http://download.tensorflow.org/data/tpu_graphs/v0"
_BLOCK = 1 << 20


class DownloadError(GraphcostError, RuntimeError):
    """A download could not be completed; the message says why and what to do instead."""


def tar_name(collection: str, split: str) -> str:
    """File name of the official tar for `collection` / `split` (README naming)."""
    parts = check_collection(collection).split(":")
    check_split(split)
    return "npz_" + "_".join(parts) + f"_{split}.tar"


def tar_url(collection: str, split: str, base_url: str = BASE_URL) -> str:
    return f"{base_url.rstrip('/')}/{tar_name(collection, split)}"


def _total_size(response, offset: int) -> int | None:
    content_range = response.headers.get("Content-Range")  # "bytes 100-999/1000"
    if content_range and "/" in content_range:
        total = content_range.rsplit("/", 1)[1].strip()
        return int(total) if total.isdigit() else None
    length = response.headers.get("Content-Length")
    return int(length) + offset if length and length.isdigit() else None


def download_file(
    url: str,
    dest: str | Path,
    timeout: float = 10.0,
    opener: Callable | None = None,
    progress: bool = True,
) -> Path:
    """Fetch `url` to `dest`, resuming ``dest.part`` if present; atomic rename when complete.

    `opener(request, timeout=...)` defaults to `urllib.request.urlopen` (tests pass a fake).
    Network failures raise `DownloadError` quickly (`timeout` seconds per connection/read).
    """
    from tqdm import tqdm

    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    offset = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"User-Agent": "graphcost"})
    if offset:
        request.add_header("Range", f"bytes={offset}-")
    opener = opener or urllib.request.urlopen
    try:
        response = opener(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and offset:  # range not satisfiable: the .part is already complete
            os.replace(part, dest)
            return dest
        raise DownloadError(f"{url}: HTTP error {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, socket.timeout, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DownloadError(
            f"cannot download {url}: {reason}. No internet access? Download the file elsewhere and copy it to "
            f"{dest}; graphcost then extracts it without network access"
            + (f" (partial download kept at {part}, {offset} bytes, resumed next time)" if offset else "")
        ) from None
    with response:
        status = getattr(response, "status", 200)
        if offset and status != 206:  # server ignored the Range header: start over
            offset = 0
        total = _total_size(response, offset)
        mode = "ab" if offset else "wb"
        try:
            with open(part, mode) as fh, tqdm(
                total=total, initial=offset, unit="B", unit_scale=True, desc=dest.name, disable=not progress
            ) as bar:
                while True:
                    block = response.read(_BLOCK)
                    if not block:
                        break
                    fh.write(block)
                    bar.update(len(block))
        except (socket.timeout, TimeoutError, OSError, http.client.HTTPException) as exc:
            raise DownloadError(f"download of {url} interrupted ({exc}); run again to resume from {part}") from None
    size = part.stat().st_size
    if total is not None and size != total:
        raise DownloadError(f"download of {url} incomplete: {size} of {total} bytes; run again to resume")
    os.replace(part, dest)
    return dest


def check_archive(tar_path: str | Path) -> list[tarfile.TarInfo]:
    """The members of a TpuGraphs tar, after checking it whole: readable headers (tarfile verifies
    their checksums), every member's data inside the file (a truncated download), and only regular
    files and directories under ``npz/``. DownloadError naming the tar and the member otherwise."""
    tar_path = Path(tar_path)
    size = tar_path.stat().st_size
    try:
        with tarfile.open(tar_path, "r:") as tar:
            members = tar.getmembers()
    except tarfile.TarError as exc:
        raise DownloadError(f"{tar_path}: not a readable tar file ({exc}); delete it and download again") from None
    if not members:
        raise DownloadError(f"{tar_path}: an empty archive; delete it and download again")
    for m in members:
        parts = [p for p in PurePosixPath(m.name).parts if p not in ("", ".")]
        if not (m.isfile() or m.isdir()):
            raise DownloadError(f"{tar_path}: refusing member {m.name!r} (only regular files and directories allowed)")
        if PurePosixPath(m.name).is_absolute() or ".." in parts or (parts and parts[0] != "npz"):
            raise DownloadError(f"{tar_path}: unexpected member {m.name!r} (TpuGraphs tars contain only npz/...)")
        if m.isfile() and m.offset_data + m.size > size:
            raise DownloadError(f"{tar_path}: truncated: member {m.name!r} ends at byte {m.offset_data + m.size} of a "
                                f"{size}-byte file; delete it and download again")
    return members


def safe_extract(tar_path: str | Path, root: str | Path, progress: bool = True) -> int:
    """Extract a TpuGraphs tar into `root` (module docstring: checked first, `filter="data"`, each npz's
    CRCs tested, moved into place atomically); returns the number of files."""
    from tqdm import tqdm

    tar_path, root = Path(tar_path), Path(root)
    members = check_archive(tar_path)
    if not hasattr(tarfile, "data_filter"):  # Python 3.11.0-3.11.3
        raise DownloadError("extracting safely needs Python >= 3.11.4 (tarfile's extraction filters)")
    root.mkdir(parents=True, exist_ok=True)
    files = [m for m in members if m.isfile()]
    with tempfile.TemporaryDirectory(prefix=".extract-", dir=root) as tmp:
        try:
            with tarfile.open(tar_path, "r:") as tar:
                tar.extractall(tmp, members=tqdm(members, desc=f"extract {tar_path.name}", disable=not progress),
                               filter="data")
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise DownloadError(f"{tar_path}: cannot be extracted ({exc}); delete it and download again") from None
        for m in files:
            got = Path(tmp, m.name)
            if got.suffix == ".npz":
                try:
                    with zipfile.ZipFile(got) as z:
                        bad = z.testzip()
                except (zipfile.BadZipFile, OSError) as exc:
                    bad = f"not a zip archive ({exc})"
                if bad is not None:
                    raise DownloadError(f"{tar_path}: member {m.name!r} is damaged ({bad} fails its CRC check); "
                                        "delete the tar and download again")
        for m in files:
            target = root / PurePosixPath(m.name)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(Path(tmp, m.name), target)
    return len(files)


def download_collection(
    collection: str,
    root: str | Path | None = None,
    splits: Iterable[str] = SPLITS,
    base_url: str = BASE_URL,
    timeout: float = 10.0,
    opener: Callable | None = None,
    keep_tar: bool = True,
    progress: bool = True,
    option: str = "root",
) -> Path:
    """Download (or reuse) and extract every split of `collection` into `root`; returns the collection dir.

    `root` is checked before anything is fetched (`graphcost.guards.atomic.check_dir_option`): a file, a path below
    one, a device, a virtual or read-only file system is an OutputPathError naming `option` (the CLI
    passes ``--data-dir``)."""
    from graphcost.guards.atomic import check_dir_option

    check_collection(collection)
    root = default_data_root() if root is None else Path(root).expanduser()
    check_dir_option(root, option)
    made = [p for p in (root, *root.parents) if not p.exists()]  # the directories this call creates
    root.mkdir(parents=True, exist_ok=True)
    try:
        _fetch_splits(collection, root, splits, base_url, timeout, opener, keep_tar, progress)
    except BaseException:  # offline, interrupted: leave no empty data root behind
        for p in made:  # deepest first
            try:
                p.rmdir()  # only if still empty: a partial download is kept
            except OSError:
                break
        raise
    return root.joinpath(*COLLECTIONS[collection])


def _fetch_splits(collection: str, root: Path, splits, base_url: str, timeout: float, opener, keep_tar: bool,
                  progress: bool) -> None:
    for split in splits:
        name = tar_name(collection, split)
        tar_path = root / name
        marker = root / f".{name}.extracted"
        if marker.exists():
            continue
        if not tar_path.exists():
            download_file(tar_url(collection, split, base_url), tar_path, timeout=timeout, opener=opener, progress=progress)
        safe_extract(tar_path, root, progress=progress)
        marker.write_text("ok\n")
        if not keep_tar:
            tar_path.unlink()
