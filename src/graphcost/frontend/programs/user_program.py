"""A user's program by reference: ``path/to/file.py:make`` or ``package.module:make``.

``make()`` takes no arguments and returns ``(fn, example_args)``: a function JAX can jit and a
tuple of example arguments (``fn(*example_args)``). The same reference lets each measuring
worker process of the cross-process protocol rebuild the program by itself. A reference may
also name an XLA HLO module (``MODULE.pb``, ``MODULE.hlo``, a dump directory, optionally with
``?inputs=FILE.npz``): `graphcost.frontend.programs.hlo_program` makes it ``(fn, args)``.

`TuneProgram` is the program once loaded: ``fn(*args)`` lowered (once per layout configuration) and
featurized; `prepare_program` makes one and lowers it, so a function JAX cannot trace is refused at once.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from typing import Any, Callable

from graphcost.errors import GraphcostError
from graphcost.frontend.programs import hlo_program


class ProgramError(GraphcostError, ValueError):
    """The program reference cannot be loaded (one line: which reference, what is wrong)."""


def check_reference(ref: str) -> None:
    """What can be told of `ref` without running any of it: its form, and that the file or module (or dump
    directory) it names exists; ProgramError in one line otherwise. So a mistyped reference is refused at once,
    before a child process is started to run the program (`graphcost.measure.program_check`). A `ref` that is not
    a string is an ArgumentError."""
    if not isinstance(ref, str) or not ref.strip():
        from graphcost.guards.bounds import ArgumentError

        raise ArgumentError(f"program reference must be a string such as prog.py:make or module.hlo, got {ref!r} "
                            f"({type(ref).__name__})")
    if hlo_program.is_hlo_reference(ref):
        try:
            hlo_program.pick_module(Path(hlo_program.split_reference(ref)[0]).expanduser())
        except hlo_program.HloProgramError as exc:
            raise ProgramError(str(exc)) from None
        return
    target, sep, attr = ref.rpartition(":")
    if not sep or not target or not attr.isidentifier():
        raise ProgramError(f"{ref}: expected FILE.py:FUNCTION, MODULE:FUNCTION (e.g. my_model.py:make) or an XLA "
                           "module MODULE.pb / MODULE.hlo / dump directory")
    if target.endswith(".py") and not Path(target).expanduser().resolve().is_file():
        raise ProgramError(f"{ref}: no such file {Path(target).expanduser().resolve()}")


def load_program(ref: str, checked: bool = False) -> tuple[Callable, tuple, str]:
    """``(fn, args, name)`` from `ref` (module docstring); ProgramError on any problem. `checked`: `ref` has passed
    `check_reference` already (its caller's `check_program`), so it is not read for its form a second time."""
    if isinstance(ref, str) and hlo_program.is_hlo_reference(ref):
        try:
            return hlo_program.load_hlo_program(ref)
        except hlo_program.HloProgramError as exc:
            raise ProgramError(str(exc)) from None
    if not checked:
        check_reference(ref)
    target, _, attr = ref.rpartition(":")
    if target.endswith(".py"):
        path = Path(target).expanduser().resolve()
        name = path.stem
        mod_name = f"_graphcost_program_{abs(hash(str(path)))}"
        spec = importlib.util.spec_from_file_location(mod_name, path)
        if spec is None or spec.loader is None:
            raise ProgramError(f"{ref}: {path} cannot be imported as a Python module")
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, str(path.parent))  # the file may import its siblings
        try:
            spec.loader.exec_module(module)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's module failed; say so in one line
            raise ProgramError(f"{ref}: importing {path.name} failed: {_why(exc)}") from None
        finally:
            sys.path.remove(str(path.parent))
    else:
        name = target.rsplit(".", 1)[-1]
        try:
            module = importlib.import_module(target)
        except (Exception, SystemExit) as exc:  # noqa: BLE001
            raise ProgramError(f"{ref}: importing module {target} failed: {_why(exc)}") from None
    make = getattr(module, attr, None)
    if not callable(make):
        raise ProgramError(f"{ref}: {target} has no function {attr!r}")
    try:
        made = make()
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - sys.exit() in make() too: a message, not a silent exit
        raise ProgramError(f"{ref}: {attr}() {'called' if isinstance(exc, SystemExit) else 'raised'} "
                           f"{_why(exc)}") from None
    if not (isinstance(made, tuple) and len(made) == 2 and callable(made[0]) and isinstance(made[1], (tuple, list))):
        raise ProgramError(f"{ref}: {attr}() must return (fn, example_args) with example_args a tuple, "
                           f"got {type(made).__name__}")
    return made[0], tuple(made[1]), name


def prepare_program(fn: Callable, args: tuple, name: str, ref: str | None = None):
    """A `TuneProgram` of ``fn(*args)``, lowered once (JAX traces it on the example arguments).

    ProgramError, in one line naming `ref` (or `name`), when JAX cannot trace the function: a
    non-JAX function, an example argument JAX does not accept (a string), numpy on traced values.
    """
    who = ref or name
    try:
        program = TuneProgram(fn, args, name)
        program.lower()
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - the user's function or arguments; said in one line
        raise ProgramError(f"{who}: JAX cannot trace the function on its example arguments: {_why(exc)}") from None
    return program


def _why(exc: BaseException, limit: int = 300) -> str:
    """An exception of the user's code in one line (``sys.exit(N)`` as such)."""
    if isinstance(exc, SystemExit):
        return f"sys.exit({exc.code!r})"
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def program_file(ref: str) -> Path | None:
    """The resolved file of a ``FILE.py:FUNCTION`` reference or an HLO module's file or dump directory
    (None for ``MODULE:FUNCTION``)."""
    if hlo_program.is_hlo_reference(ref):
        return hlo_program.module_file(ref)
    target = ref.rpartition(":")[0]
    return Path(target).expanduser().resolve() if target.endswith(".py") else None


def absolute_reference(ref: str) -> str:
    """`ref` with its files made absolute, so it names the same program from any directory (result.json's
    ``program``, which `graphcost verify` rebuilds); a ``MODULE:FUNCTION`` reference is returned as is."""
    if hlo_program.is_hlo_reference(ref):
        path, inputs = hlo_program.split_reference(ref)
        return hlo_program.hlo_reference(str(Path(path).expanduser().resolve()),
                                         Path(inputs).expanduser().resolve() if inputs else None)
    target, _, attr = ref.rpartition(":")
    return f"{Path(target).expanduser().resolve()}:{attr}" if target.endswith(".py") else ref


def program_sha256(ref: str) -> str | None:
    """Hex SHA-256 of the file that holds the program of `ref` (the ``.py`` file, or the HLO module file, the one a
    dump directory's reference picks), None for a ``MODULE:FUNCTION`` reference or a file that cannot be read:
    what result.json records so that `graphcost verify` runs only the program that was tuned."""
    import hashlib

    path = program_file(ref)
    try:
        if path is not None and path.is_dir():
            path = hlo_program.pick_module(path)[0]
        return None if path is None else hashlib.sha256(path.read_bytes()).hexdigest()
    except (OSError, hlo_program.HloProgramError):
        return None


class TuneProgram:
    """A user's program ``fn(*args)``: lowered once per layout configuration, featurized once.

    Calls go through the flattened arguments (``compiled(*flat_args)``), so flag-only and
    layout configurations share one calling convention.
    """

    def __init__(self, fn: Callable, args: tuple, name: str = "program"):
        import jax

        self.fn, self.args, self.name = fn, tuple(args), name
        self.flat_args, self._tree = jax.tree_util.tree_flatten(self.args)
        self._plain: Any = None  # jax.stages.Lowered, once lowered
        self._layout = None  # (LayoutProgram, FeaturizedModule, active sites, node ids), lazily

    def flat_fn(self, *flat):
        import jax

        return self.fn(*jax.tree_util.tree_unflatten(self._tree, list(flat)))

    def lower(self, layout_config: list | None = None):
        """The `Lowered` program, unconstrained (`layout_config` None) or with layouts on every site."""
        import jax

        if layout_config is None:
            if self._plain is None:
                self._plain = jax.jit(self.flat_fn).lower(*self.flat_args)
            return self._plain
        return self.layout_parts()[0].lowered(layout_config)

    def layout_parts(self):
        """(LayoutProgram, FeaturizedModule, active sites, (C,) node ids), built on first use."""
        if self._layout is None:
            from graphcost.frontend.programs.layouts import LayoutProgram, locate_sites

            lp = LayoutProgram(self.fn, self.args)
            self._layout = (lp, *locate_sites(lp))
        return self._layout

    def featurized(self):
        """The unoptimized, unconstrained HLO module's TpuGraphs features (`FeaturizedModule`)."""
        return self.layout_parts()[1]
