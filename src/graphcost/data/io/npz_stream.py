"""Read and write single arrays inside an ``.npz`` zip without holding them in memory.

An npz file is a zip archive with one ``<key>.npy`` member per array (stored for `np.savez`,
deflated for `np.savez_compressed`). The NLP layout files hold a (c, nc, 18) float32
``node_config_feat`` of up to 720 MB, so we:

* parse the ``.npy`` header ourselves (`numpy.lib.format.read_magic` + header readers) and then
  read C-ordered rows from the zip member stream chunk by chunk (`iter_rows`), which works for
  stored and deflated members alike;
* for a *stored* (uncompressed) member, locate its bytes inside the zip file and memory-map them,
  giving true random access (`LazyNpyArray.__getitem__` on any rows);
* write npz files member by member (`NpzWriter`), streaming an array in row chunks, into a
  temporary file that is atomically renamed into place.

Nothing is ever unpickled: object dtypes are refused. A damaged archive (bad CRC or deflate
stream, unknown compression method, unparsable ``.npy`` header, a header shape larger than the
member's bytes) is reported as a `SchemaError` naming the file and member (`damaged_npz`),
never as a zlib/zipfile/tokenize traceback or a huge allocation.
"""

from __future__ import annotations

import os
import struct
import tokenize
import zipfile
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Generator, Iterator

import numpy as np
from numpy.lib import format as npy_format

from graphcost.guards.atomic import temp_beside
from graphcost.data.io.schema import SchemaError

__all__ = [
    "NpyHeader", "read_member_header", "header_from_zip", "check_declared_memory", "iter_rows", "LazyNpyArray", "NpzWriter",
    "DAMAGED_ARCHIVE_ERRORS", "damaged_npz", "check_zip_magic",
]  # fmt: skip

_READ_BLOCK = 1 << 20  # bytes per read() call when skipping / reading

# What reading a damaged npz can raise inside zipfile / zlib / numpy.lib.format: a bad CRC or zip
# structure (BadZipFile), a bad deflate stream (zlib.error), an unknown compression method
# (NotImplementedError), an unparsable .npy header dict (TokenError / SyntaxError / ValueError),
# short reads (EOFError / ValueError / OSError), absurd sizes (MemoryError / OverflowError / struct.error),
# a flipped "encrypted" flag bit (RuntimeError).
DAMAGED_ARCHIVE_ERRORS = (
    zipfile.BadZipFile, zlib.error, NotImplementedError, tokenize.TokenError, SyntaxError, EOFError,
    ValueError, OSError, MemoryError, OverflowError, struct.error, RuntimeError,  # RuntimeError: "encrypted" flag
)  # fmt: skip
_ZIP_MAGICS = (b"PK\x03\x04", b"PK\x05\x06")  # a local file header / an empty archive's end record


@contextmanager
def damaged_npz(path, key: str):
    """Turn any error of reading a damaged npz (see `DAMAGED_ARCHIVE_ERRORS`) into a `SchemaError`.

    A `SchemaError` passes through unchanged; a missing file or a permission problem stays an
    `OSError` (it is about the path, not the content).
    """
    try:
        yield
    except SchemaError:
        raise
    except (FileNotFoundError, PermissionError, IsADirectoryError):
        raise
    except DAMAGED_ARCHIVE_ERRORS as exc:
        raise SchemaError(path, key, f"damaged npz archive ({type(exc).__name__}: {exc})") from None


def check_zip_magic(path, key: str = "*") -> None:
    """Raise `SchemaError` unless `path` starts like a zip archive (every npz does)."""
    with open(path, "rb") as fh:
        head = fh.read(6)
    if head[:4] not in _ZIP_MAGICS:
        what = "a single-array .npy file" if head.startswith(b"\x93NUMPY") else f"first bytes {head[:4]!r}"
        raise SchemaError(path, key, f"not an npz (zip) archive ({what}); expected a TpuGraphs .npz file")


class NpyHeader:
    """Shape/dtype/order of one ``.npy`` member and where its data starts."""

    def __init__(self, shape, dtype, fortran_order, data_offset, compress_type, file_data_offset):
        self.shape: tuple[int, ...] = tuple(int(s) for s in shape)
        self.dtype: np.dtype = np.dtype(dtype)
        self.fortran_order: bool = bool(fortran_order)
        self.data_offset = data_offset  # offset of array data inside the member stream
        self.compress_type = compress_type
        self.file_data_offset = file_data_offset  # absolute offset in the zip file (stored members), else None

    @property
    def row_bytes(self) -> int:
        return int(np.prod(self.shape[1:], dtype=np.int64)) * self.dtype.itemsize


def _member_name(zf: zipfile.ZipFile, key: str, path) -> zipfile.ZipInfo:
    try:
        return zf.getinfo(f"{key}.npy")
    except KeyError:
        raise SchemaError(path, key, f"missing (npz members: {sorted(n.removesuffix('.npy') for n in zf.namelist())})")


def _parse_header(fp, path, key):
    try:
        version = npy_format.read_magic(fp)
        if version == (1, 0):
            shape, fortran, dtype = npy_format.read_array_header_1_0(fp)
        elif version in ((2, 0), (3, 0)):
            shape, fortran, dtype = npy_format.read_array_header_2_0(fp)
        else:  # pragma: no cover - numpy only writes 1.0-3.0
            raise ValueError(f"unsupported .npy format version {version}")
    except (ValueError, tokenize.TokenError, SyntaxError, EOFError, zlib.error, zipfile.BadZipFile) as exc:
        raise SchemaError(path, key, f"unreadable .npy header ({type(exc).__name__}: {exc})") from None
    if np.dtype(dtype).hasobject:
        raise SchemaError(path, key, "object dtype (would need unpickling; refused)")
    return shape, fortran, dtype


def _stored_data_start(path, info: zipfile.ZipInfo) -> int:
    """Absolute file offset of a stored member's bytes (after its local file header)."""
    with open(path, "rb") as fh:
        fh.seek(info.header_offset)
        local = fh.read(30)
        if len(local) != 30 or local[:4] != b"PK\x03\x04":
            raise SchemaError(path, info.filename, "corrupt zip local header")
        name_len, extra_len = struct.unpack("<HH", local[26:30])
        return info.header_offset + 30 + name_len + extra_len


def header_from_zip(zf: zipfile.ZipFile, path, key: str) -> NpyHeader:
    """Header of member ``key`` of the open npz `zf`; checks the declared shape fits the member.

    A (damaged) header whose shape needs more bytes than the member holds is refused here, before
    anyone allocates or memory-maps it.
    """
    with damaged_npz(path, key):
        info = _member_name(zf, key, path)
        with zf.open(info) as fp:
            shape, fortran, dtype = _parse_header(fp, path, key)
            data_offset = fp.tell()
        header = NpyHeader(shape, dtype, fortran, data_offset, info.compress_type, None)
        if any(d < 0 for d in header.shape):
            raise SchemaError(path, key, f"negative dimension in .npy header shape {header.shape}")
        needed = data_offset + int(np.prod(header.shape, dtype=object)) * header.dtype.itemsize
        if needed > info.file_size:
            raise SchemaError(
                path, key, f".npy header declares shape {header.shape} {header.dtype} ({needed} bytes) but the "
                f"member holds {info.file_size} bytes (truncated or damaged file)",
            )
        if info.compress_type == zipfile.ZIP_STORED:
            header.file_data_offset = _stored_data_start(path, info) + data_offset
            if header.file_data_offset + needed - data_offset > os.path.getsize(path):
                raise SchemaError(path, key, "member data runs past the end of the file (truncated or damaged file)")
    return header


# What the arrays of one graph read whole may declare. The largest official TpuGraphs file (an NLP layout graph)
# holds about 0.7 GB, nearly all of it node_config_feat, which is read lazily; a graph's other arrays take
# tens of MB. A declaration past this is a damaged or hostile file, whatever memory the machine has.
DECLARED_BYTES_MAX = 2 * 2**30


def check_declared_memory(zf: zipfile.ZipFile, path, keys) -> None:
    """SchemaError when the arrays `keys` of the open npz `zf` declare (shape x dtype, read from their headers only) more
    bytes than one graph can need (`DECLARED_BYTES_MAX`) or than this machine has available: a small file whose
    compressed members decompress to gigabytes is refused before anything is allocated (a 27 MB npz declaring a
    6 GB ``node_feat``)."""
    from graphcost.guards.bounds import available_memory_bytes

    free = available_memory_bytes()
    limit, why = ((DECLARED_BYTES_MAX, "the most one graph's arrays can need")
                  if free is None or free > DECLARED_BYTES_MAX else (free, "the memory available"))
    sizes = {}
    for key in keys:
        h = header_from_zip(zf, path, key)
        sizes[key] = int(np.prod(h.shape, dtype=object)) * h.dtype.itemsize
    if sum(sizes.values()) > limit:
        big = max(sizes, key=sizes.__getitem__)
        h = header_from_zip(zf, path, big)
        raise SchemaError(path, big, f"the arrays declare {sum(sizes.values()) / 2**30:.3g} GiB ({big}: shape "
                                     f"{h.shape} {h.dtype}), more than the {limit / 2**30:.3g} GiB of {why}")


def read_member_header(path: str | Path, key: str) -> NpyHeader:
    """Header of member ``key`` of the npz at `path` (reads only a few hundred bytes)."""
    check_zip_magic(path, key)
    with damaged_npz(path, key):
        with zipfile.ZipFile(path) as zf:
            return header_from_zip(zf, path, key)


def _read_exact(fp, nbytes: int, path, key) -> bytes:
    buf = bytearray()
    while len(buf) < nbytes:
        block = fp.read(min(nbytes - len(buf), 64 * _READ_BLOCK))
        if not block:
            raise SchemaError(path, key, f"truncated data: expected {nbytes} more bytes, got {len(buf)}")
        buf += block
    return bytes(buf)


def iter_rows(
    path: str | Path, key: str, chunk_rows: int, start: int = 0, stop: int | None = None
) -> Iterator[tuple[int, np.ndarray]]:
    """Yield ``(first_row, rows)`` of member ``key``, `chunk_rows` rows at a time, along axis 0.

    Memory is O(chunk_rows x row size). Works for stored and deflated members. A Fortran-ordered
    array (rare; `np.savez` of a transposed array) cannot be streamed by rows: it is read whole.
    A damaged member raises `SchemaError` (see `damaged_npz`).
    """
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
    rows = _iter_rows(path, key, chunk_rows, start, stop)
    try:
        while True:
            with damaged_npz(path, key):  # only the reading, never the consumer's code
                try:
                    item = next(rows)
                except StopIteration:
                    return
            yield item
    finally:
        rows.close()


def _iter_rows(path, key: str, chunk_rows: int, start: int,
               stop: int | None) -> Generator[tuple[int, np.ndarray], None, None]:
    header = read_member_header(path, key)
    n = header.shape[0] if header.shape else 1
    stop = n if stop is None else min(stop, n)
    if start >= stop:
        return
    if header.fortran_order and len(header.shape) > 1:
        with zipfile.ZipFile(path) as zf, zf.open(f"{key}.npy") as fp:
            full = npy_format.read_array(fp, allow_pickle=False)
        for s in range(start, stop, chunk_rows):
            yield s, np.ascontiguousarray(full[s : min(s + chunk_rows, stop)])
        return
    if header.file_data_offset is not None:  # stored member: memory map, no copy of the whole file
        lazy = LazyNpyArray(path, key, header)
        for s in range(start, stop, chunk_rows):
            yield s, lazy[s : min(s + chunk_rows, stop)]
        return
    row_bytes = header.row_bytes
    with zipfile.ZipFile(path) as zf, zf.open(f"{key}.npy") as fp:
        fp.seek(header.data_offset + start * row_bytes)  # forward seek = decompress and discard
        for s in range(start, stop, chunk_rows):
            k = min(chunk_rows, stop - s)
            raw = _read_exact(fp, k * row_bytes, path, key)
            yield s, np.frombuffer(raw, dtype=header.dtype).reshape((k,) + header.shape[1:])


class LazyNpyArray:
    """An array inside an npz, read on demand along axis 0.

    Supports ``shape``, ``dtype``, ``ndim``, ``len()``, ``x[i]``, ``x[a:b]``, ``x[index_array]``
    (optionally followed by more axes, e.g. ``x[idx, :, 3]``), ``iter_chunks(k)`` and
    ``np.asarray(x)`` (materialises). Stored members are memory-mapped (random access is cheap);
    deflated members are decompressed sequentially, so each ``__getitem__`` is one pass up to
    the last requested row, with memory bounded by the chunk size plus the result.
    """

    def __init__(self, path: str | Path, key: str, header: NpyHeader | None = None, chunk_rows: int = 1024):
        self.path = Path(path)
        self.key = key
        self.header = header or read_member_header(path, key)
        self.chunk_rows = chunk_rows

    shape = property(lambda self: self.header.shape)
    dtype = property(lambda self: self.header.dtype)
    ndim = property(lambda self: len(self.header.shape))
    size = property(lambda self: int(np.prod(self.header.shape, dtype=np.int64)))
    nbytes = property(lambda self: self.size * self.header.dtype.itemsize)

    def __len__(self) -> int:
        return self.header.shape[0]

    def __repr__(self) -> str:
        return f"LazyNpyArray({str(self.path)!r}, {self.key!r}, shape={self.shape}, dtype={self.dtype})"

    def _memmap(self) -> np.ndarray | None:
        h = self.header
        if h.file_data_offset is None or (h.fortran_order and len(h.shape) > 1):
            return None
        if self.size == 0:
            return np.zeros(h.shape, h.dtype)
        with damaged_npz(self.path, self.key):
            return np.memmap(self.path, dtype=h.dtype, mode="r", offset=h.file_data_offset, shape=h.shape)

    def iter_chunks(self, chunk_rows: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """Yield ``(start, rows)`` chunks along axis 0."""
        return iter_rows(self.path, self.key, chunk_rows or self.chunk_rows)

    def __array__(self, dtype=None, copy=None):
        out = self[:]
        return out if dtype is None else out.astype(dtype, copy=False)

    def __getitem__(self, item):
        rest = ()
        if isinstance(item, tuple):
            item, rest = item[0], item[1:]
        out = self._rows(item)
        if not rest:
            return out
        if isinstance(item, (int, np.integer)):
            return out[rest]
        lead = 1 if isinstance(item, slice) else max(np.ndim(item), 1)
        return out[(slice(None),) * lead + tuple(rest)]

    def _rows(self, item) -> np.ndarray:
        n = len(self)
        mm = self._memmap()
        if isinstance(item, (int, np.integer)):
            i = int(item) + n if item < 0 else int(item)
            if not 0 <= i < n:
                raise IndexError(f"index {item} out of range for axis 0 of size {n}")
            return np.array(mm[i]) if mm is not None else next(iter_rows(self.path, self.key, 1, i, i + 1))[1][0]
        if isinstance(item, slice):
            start, stop, step = item.indices(n)
            if step == 1:
                if mm is not None:
                    return np.array(mm[start:stop])
                parts = [c for _, c in iter_rows(self.path, self.key, self.chunk_rows, start, stop)]
                return np.concatenate(parts) if parts else np.zeros((0,) + self.shape[1:], self.dtype)
            item = np.arange(start, stop, step)
        idx = np.asarray(item)
        if idx.dtype == bool:
            if idx.shape != (n,):
                raise IndexError(f"boolean index of shape {idx.shape} does not match axis 0 of size {n}")
            idx = np.flatnonzero(idx)
        if idx.dtype.kind not in "iu":
            raise IndexError(f"unsupported index {item!r}")
        idx = np.where(idx < 0, idx + n, idx).astype(np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            raise IndexError(f"index out of range for axis 0 of size {n}")
        if mm is not None:
            return np.array(mm[idx])
        out = np.empty(idx.shape + self.shape[1:], self.dtype)
        if idx.size == 0:
            return out
        flat = idx.reshape(-1)
        order = np.argsort(flat, kind="stable")
        sorted_idx = flat[order]
        lo, hi = int(sorted_idx[0]), int(sorted_idx[-1]) + 1
        res = out.reshape((-1,) + self.shape[1:])
        for s, chunk in iter_rows(self.path, self.key, self.chunk_rows, lo, hi):
            a, b = np.searchsorted(sorted_idx, [s, s + len(chunk)])
            res[order[a:b]] = chunk[sorted_idx[a:b] - s]
        return out


class NpzWriter:
    """Write an npz (readable by `np.load`) member by member, atomically.

    Usage::

        with NpzWriter(path, compressed=True) as w:
            w.write("node_feat", node_feat)
            with w.stream("node_config_feat", (c, nc, 18), np.float32) as s:
                for chunk in chunks:
                    s.write(chunk)

    The file is written to a temporary file in the destination directory and renamed into place
    only when the block exits without error.
    """

    def __init__(self, path: str | Path, compressed: bool = True, compresslevel: int | None = None):
        self.path = Path(path)
        fd, self.tmp = temp_beside(self.path)  # mode 0o666 & ~umask, not mkstemp's 0600
        os.close(fd)
        method = zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED
        self.zf = zipfile.ZipFile(self.tmp, "w", compression=method, allowZip64=True, compresslevel=compresslevel)
        self._closed = False

    def write(self, key: str, array) -> None:
        array = np.asanyarray(array)
        if array.dtype.hasobject:
            raise ValueError(f"{key}: refusing to write an object array")
        with self.stream(key, array.shape, array.dtype) as s:
            if array.ndim == 0:
                s._fp.write(array.tobytes())
                s._written = 1
            else:
                s.write(array)

    def stream(self, key: str, shape, dtype) -> "_MemberStream":
        return _MemberStream(self.zf, key, tuple(int(x) for x in shape), np.dtype(dtype))

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.zf.close()
        os.replace(self.tmp, self.path)

    def abort(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.zf.close()
        finally:
            self.tmp.unlink(missing_ok=True)

    def __enter__(self) -> "NpzWriter":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


class _MemberStream:
    """One ``<key>.npy`` member being written row-chunk by row-chunk (C order)."""

    def __init__(self, zf: zipfile.ZipFile, key: str, shape: tuple[int, ...], dtype: np.dtype):
        self.key, self.shape, self.dtype = key, shape, dtype
        self._fp = zf.open(f"{key}.npy", "w", force_zip64=True)
        header = {"descr": npy_format.dtype_to_descr(dtype), "fortran_order": False, "shape": shape}
        if len(repr(header)) < 60000:  # format 1.0 headers hold up to 65,535 bytes
            npy_format.write_array_header_1_0(self._fp, header)
        else:
            npy_format.write_array_header_2_0(self._fp, header)
        self._written = 0
        self._expected = shape[0] if shape else 1

    def write(self, rows) -> None:
        rows = np.ascontiguousarray(rows, dtype=self.dtype)
        if rows.shape[1:] != self.shape[1:]:
            raise ValueError(f"{self.key}: chunk shape {rows.shape} does not fit array shape {self.shape}")
        if self._written + rows.shape[0] > self._expected:
            raise ValueError(f"{self.key}: more rows written than the declared shape {self.shape}")
        if rows.size:
            self._fp.write(memoryview(rows.reshape(-1)).cast("B"))
        self._written += rows.shape[0]

    def __enter__(self) -> "_MemberStream":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self._fp.close()
        if exc_type is None and self._written != self._expected:
            raise ValueError(f"{self.key}: wrote {self._written} rows, declared {self._expected}")


def save_npz_lzma(path: str | Path, arrays: dict[str, np.ndarray]) -> Path:
    """Write `arrays` atomically as an npz whose members are LZMA-compressed (``ZIP_LZMA``); `np.load`
    reads it like any npz. zlib (``savez_compressed``) sees 32 KB back; LZMA's window spans whole members,
    so arrays that repeat themselves far apart (a program's near-identical kernels, a dataset's graphs)
    shrink several times more."""
    from graphcost.guards.atomic import atomic_write

    with atomic_write(path) as fh, zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_LZMA) as z:
        for key, value in arrays.items():
            with z.open(f"{key}.npy", "w", force_zip64=True) as member:
                npy_format.write_array(member, np.asarray(value), allow_pickle=False)
    return Path(path)
