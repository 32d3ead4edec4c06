"""A fingerprint of a compiled XLA CPU executable, equal exactly when two compilations made the same code.

Why: many XLA CPU options change nothing in a given program (on the first 6 repeated programs of
the zoo flag collection, 32 flag configurations made 26-27 distinct executables; equal compiled
data-movement statistics, a cruder test, would have merged them into a median of 11), so some
configurations of one program run the very same executable. Their runtimes are measurements of one thing and their order in a label
is noise by construction; `graphcost collect` gives them one pooled label
(`graphcost.measure.cross_process.pool_executables`).

Where the bytes come from: JAX's persistent compilation cache entry of the configuration, i.e.
exactly what the measuring processes loaded. A cache entry is written from the freshly compiled
executable and holds its machine code; an executable loaded back from the cache re-serializes
WITHOUT its object files, so fingerprinting ``Compiled`` objects directly would depend on whether
the compile was a cache hit. `recording_cache_keys` notes, per compiling thread, the cache key
JAX looked up (jax 0.10: ``jax._src.compilation_cache.get_executable_and_time``, called for every
compile through the cache, hit or miss); `cached_fingerprint` then reads that entry.

What is hashed (jaxlib 0.10, CPU). A serialized executable is a varint-length-prefixed IFRT header,
then ``{1: the CPU executable, 2: the compile options}``; the options hold the configuration
itself, so only field 1 is read. Its fields:

* 1, the optimized ``HloModule`` with its config: the config is the debug options (the flags
  again), so only the module (1.1) enters, without its id (1.1.5, which counts compilations);
* 6, the thunk sequence (what runs, in order), each thunk's copy of that module id dropped, at any
  depth: a ``while`` or ``conditional`` thunk nests its body's thunks (with the id kept there, no two compiles
  of a program with a loop were ever equal);
* 8, the object files (the machine code of the LLVM kernels, one ELF per codegen split; their
  order follows the parallel codegen threads, so each is hashed and the hashes sorted);
* everything else (buffer assignment, symbols, target machine and CPU features, data layout) as is.

Options that act only on the machine code (fast-math, the LLVM optimisation level) change the
object files; options that change nothing leave every part equal: on a toy program,
``xla_llvm_disable_expensive_passes=False`` (its default, passed explicitly), a preferred vector
width of 512 on a CPU without AVX-512 and a codegen split count of 1 gave equal fingerprints,
fast-math and ``xla_backend_optimization_level=0`` did not. ``xla_cpu_multi_thread_eigen`` leaves
no trace in the executable, and timing a 1024² matmul chain with it on and off gave 44.1 vs 44.3 ms
(2 cores, 2026-11-27): it does not act at run time either.

When the serialization is not laid out as above (another backend, another jaxlib), the fingerprint
is the hash of the whole serialization, options included; when no cache entry can be found, there
is none (None). Either way the configuration counts as its own executable: nothing is pooled wrongly.
"""

from __future__ import annotations

import hashlib
import threading
from contextlib import contextmanager
from typing import Iterator, cast

import numpy as np

from graphcost.frontend.hlo.protowire import LEN, ProtoDecodeError, read_varint, scan_fields

_EXECUTABLE, _MODULE_WITH_CONFIG, _MODULE, _MODULE_ID = 1, 1, 1, 5
_THUNKS, _THUNK, _THUNK_INFO, _THUNK_MODULE_ID = 6, 1, 2, 3
_OBJECT_FILE = 8
_TIME_BYTES = 4  # a cache entry: compile time (4 bytes, big-endian), then the serialized executable

_thread = threading.local()


def fingerprint(serialized: bytes) -> str:
    """Hex SHA-256 of what a serialized CPU executable runs (module docstring)."""
    try:
        parts = _code_parts(serialized)
    except (ProtoDecodeError, _Unexpected):
        parts = [b"whole", serialized]
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.hexdigest()


_warmed = threading.Event()


def warm_up_compiler() -> None:
    """Compile a trivial function once per process. The first XLA CPU compile of a process serializes to
    other bytes than every later compile of the same configuration (jaxlib 0.10.2: a tune's default, compiled
    first, matched none of the 23 of its 31 single-option configurations that made the same code, and the
    same process's second compile of it matched all 23), so the first compile that is fingerprinted must
    not be the process's first."""
    if _warmed.is_set():
        return
    import jax
    import jax.numpy as jnp

    jax.jit(lambda x: x * 2.0 + 1.0).lower(jnp.zeros((4,), jnp.float32)).compile()
    _warmed.set()


@contextmanager
def recording_cache_keys() -> Iterator[None]:
    """Within the block, each compile through JAX's persistent cache notes its cache key in the
    compiling thread (for `cached_fingerprint`); a JAX without the hook records nothing. JAX's
    in-memory caches are cleared on entry (``jax.clear_caches``): a program compiled earlier in this
    process would otherwise be served from memory, without a look at the persistent cache. The compiler is
    warmed up first (`warm_up_compiler`)."""
    try:
        import jax
        from jax._src import compilation_cache as cc
    except ImportError:  # pragma: no cover - another JAX layout: no fingerprints, nothing pooled
        yield
        return
    warm_up_compiler()
    jax.clear_caches()
    original = getattr(cc, "get_executable_and_time", None)
    if original is None:  # pragma: no cover - another JAX version
        yield
        return

    def noting(cache_key, *args, **kwargs):
        _thread.key = cache_key
        return original(cache_key, *args, **kwargs)

    cc.get_executable_and_time = noting
    try:
        yield
    finally:
        cc.get_executable_and_time = original


def cached_fingerprint() -> str | None:
    """`fingerprint` of the cache entry of this thread's last compile (`recording_cache_keys`),
    None when there is none (no cache in use, no hook, the entry was not written)."""
    key, _thread.key = getattr(_thread, "key", None), None
    if key is None:
        return None
    try:
        from jax._src import compilation_cache as cc
        from jax._src import xla_bridge

        cache = cc._get_cache(xla_bridge.get_backend())
        entry = None if cache is None else cache.get(key)
        if entry is None:
            return None
        return fingerprint(cc.decompress_executable(entry)[_TIME_BYTES:])
    except (ImportError, AttributeError, OSError, ValueError):  # another JAX, an unreadable entry: none
        return None


def executable_ids(fingerprints: list[str | None]) -> np.ndarray:
    """(K,) int64: for each configuration, the index of the first configuration with its fingerprint
    (so ``ids[k] <= k`` and ``ids[ids[k]] == ids[k]``): configurations with one id run one
    executable; a configuration without a fingerprint (None) is its own."""
    first: dict[str, int] = {}
    return np.asarray([k if fp is None else first.setdefault(fp, k) for k, fp in enumerate(fingerprints)],
                      dtype=np.int64)


class _Unexpected(Exception):
    """The serialization is not laid out as the module docstring says."""


Field = tuple[int, "memoryview | int", int]  # (field number, payload: a memoryview for LEN fields, else an int, key offset)


def _fields(buf: bytes | memoryview, message: str) -> list[Field]:
    """The top-level fields of one message (`protowire.scan_fields`), typed."""
    out: list[Field] = []
    for number, wire, value, key, _ in scan_fields(buf, message):
        out.append((number, value if wire == LEN and isinstance(value, memoryview) else cast(int, value), key))
    return out


def _text(value: memoryview | int) -> bytes:
    return bytes(value) if isinstance(value, memoryview) else str(value).encode()


def _code_parts(blob: bytes) -> list[bytes]:
    """The byte strings that make up the fingerprint of one serialized CPU executable."""
    header, pos = read_varint(blob, 0, "serialized executable")
    body = memoryview(blob)[pos + header:]
    executables = [v for f, v, _ in _fields(body, "ExecutableAndOptions") if f == _EXECUTABLE and isinstance(v, memoryview)]
    if len(executables) != 1:
        raise _Unexpected
    fields = _fields(executables[0], "CpuExecutable")
    module, module_id = _module_without_id(fields)
    parts = [b"module", module]
    objects = []
    for number, value, _ in fields:
        if number == _MODULE_WITH_CONFIG:
            continue
        if number == _OBJECT_FILE and isinstance(value, memoryview):
            objects.append(hashlib.sha256(value).digest())
        elif number == _THUNKS and isinstance(value, memoryview):
            parts += [b"thunks", _thunks_without_module_id(value, module_id)]
        else:
            parts += [str(number).encode(), _text(value)]
    return parts + [b"objects", *sorted(objects)]


def _module_without_id(fields: list[Field]) -> tuple[bytes, int]:
    """The executable's HloModuleProto (field 1.1) re-encoded without its id (1.1.5), and the id."""
    for number, value, _ in fields:
        if number != _MODULE_WITH_CONFIG or not isinstance(value, memoryview):
            continue
        for n2, module, _ in _fields(value, "HloModuleProtoWithConfig"):
            if n2 != _MODULE or not isinstance(module, memoryview):
                continue
            top = _fields(module, "HloModuleProto")
            ends = [key for _, _, key in top[1:]] + [len(module)]
            ids = [v for n3, v, _ in top if n3 == _MODULE_ID and isinstance(v, int)]
            if len(ids) != 1:
                raise _Unexpected
            kept = b"".join(bytes(module[key:end]) for (n3, v, key), end in zip(top, ends)
                            if not (n3 == _MODULE_ID and isinstance(v, int)))
            return kept, ids[0]
    raise _Unexpected


def _thunks_without_module_id(thunks: memoryview, module_id: int) -> bytes:
    """The thunk sequence re-encoded as (field, value) records, the module id left out of every thunk's
    info at any depth: a ``while`` or ``conditional`` thunk holds its body's thunk sequences, whose thunks
    carry the module id too (left in, every compile of a program with a loop looked new)."""
    return _without_module_id(thunks, module_id, "ThunkSequence", 0).encode()


_NESTING_MAX = 64  # thunk sequences nested deeper than this are hashed as raw bytes


def _without_module_id(message: memoryview, module_id: int, name: str, depth: int, info: bool = False) -> str:
    """`message` as text records, walked depth-first: a length-delimited field that parses as a message
    is walked the same way, one that does not (bytes, strings) is kept as hex; in a thunk's info (a field
    `_THUNK_INFO` of a message inside the sequence), a varint field `_THUNK_MODULE_ID` holding the module
    id is left out."""
    try:
        fields = _fields(message, name)
    except ProtoDecodeError:
        return bytes(message).hex()
    out = []
    for number, value, _ in fields:
        if not isinstance(value, memoryview):
            if not (info and number == _THUNK_MODULE_ID and value == module_id):
                out.append(f"{number}:{value}")
        elif depth < _NESTING_MAX and len(value):
            inner = _without_module_id(value, module_id, name, depth + 1, info=depth >= 1 and number == _THUNK_INFO)
            out.append(f"{number}:[{inner}]")
        else:
            out.append(f"{number}:{bytes(value).hex()}")
    return "\n".join(out)


def module_digest(compiled) -> str:
    """SHA-256 of an executable's optimized module text: equal for configurations XLA compiled alike
    (machine-code-only flags differ in the flag columns the kernel model sees, not here): a cruder
    identity than `cached_fingerprint`, with no cache entry needed."""
    return hashlib.sha256(compiled.as_text().encode()).hexdigest()
