"""Refuse a dataset whose splits share a graph (train/valid/test leakage), whoever wrote it.

Two npz files hold the same graph when their members have the same names, sizes and CRC-32s. Those
are read from each zip's central directory (a few hundred bytes per file, no array is
decompressed), so the check costs one small read per file even on the full TpuGraphs dataset. The
zip timestamps differ between two writes of the same arrays and are ignored; a CRC-32 collision
on every member of two different graphs is the only way to be wrong, and it errs on the side of a
refusal.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import Mapping, Sequence


def npz_fingerprint(path: str | Path) -> tuple | None:
    """((member name, uncompressed size, CRC-32), ...) of an npz file, sorted; None when the file
    is not a readable zip (the loader reports that with its own error)."""
    try:
        with zipfile.ZipFile(path) as archive:
            return tuple(sorted((i.filename, i.file_size, i.CRC) for i in archive.infolist()))
    except (OSError, zipfile.BadZipFile, ValueError, EOFError):
        return None


def shared_graphs(files: Mapping[str, Sequence[Path]]) -> list[tuple[Path, Path]]:
    """(file in one split, file with the same content in a later split) pairs of `files`
    ({split: npz files}); empty when the splits are disjoint. Within one split a duplicate is
    no leak (de-duplication is the trainer's business) and is not reported."""
    seen: dict[tuple, tuple[str, Path]] = {}
    pairs = []
    for split, paths in files.items():
        for path in paths:
            fingerprint = npz_fingerprint(path)
            if fingerprint is None:
                continue
            first = seen.setdefault(fingerprint, (split, path))
            if first[0] != split:
                pairs.append((first[1], path))
    return pairs
