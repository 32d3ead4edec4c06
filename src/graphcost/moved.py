"""Old import paths of moved packages, modules and names, kept for one release with a DeprecationWarning.

`import graphcost.dag.train` (or `from graphcost.frontend.measure import cross_process`) still works: an import
hook hands back the module at its new path, the same module object, so classes and exceptions compare equal
across both names. Only imports are aliased; `python -m OLD.PATH` needs the new path.

A name that moved out of a module (`MOVED_NAMES`) is served by that module's `__getattr__` (`moved_names`).
Registered by `graphcost/__init__` (first on `sys.meta_path`); no graphcost imports.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import warnings
from importlib.machinery import ModuleSpec
from types import ModuleType

MOVED = {
    "graphcost.dag": "graphcost.layerdag",
    "graphcost.frontend.measure": "graphcost.measure",
    "graphcost.frontend.collect": "graphcost.collect",
    "graphcost.runs.schedule": "graphcost.runs.lr_schedule",
    "graphcost.layerdag.schedule": "graphcost.layerdag.denoising_schedule",
    "graphcost.data.datasets": "graphcost.data.pyg",
}  # old name -> new name, of a package or a module (2026-12-04; the aliases go in the release after next)


MOVED_NAMES = {
    "graphcost.models.trees": ("graphcost.inference.blend", (
        "BLEND_FILE", "GRID", "PRIORS", "TIE_BREAK", "WEIGHTS", "Blend", "blended", "choose_blend", "copies_prior",
        "count_prior", "mean_metric", "prior_scores")),
}  # module -> (where its moved names went, the names) (2026-12-05)


def moved_names(module: str):
    """The `__getattr__` of `module` for the names that moved out of it (`MOVED_NAMES`): each is the object at its
    new home, with a DeprecationWarning; any other missing name is the usual AttributeError."""
    home, names = MOVED_NAMES[module]

    def __getattr__(name: str):
        if name not in names:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        warnings.warn(f"{module}.{name} moved to {home}.{name}; the old name goes in the release after next",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(home), name)

    return __getattr__


def new_name(name: str) -> str | None:
    """The new dotted name of `name` if it is or lies under a moved package or module, else None; moves compose
    (graphcost.dag.schedule -> graphcost.layerdag.schedule -> graphcost.layerdag.denoising_schedule)."""
    moved = name
    for _ in range(len(MOVED)):
        step = next((new + moved[len(old):] for old, new in MOVED.items()
                     if moved == old or moved.startswith(old + ".")), None)
        if step is None:
            break
        moved = step
    return moved if moved != name else None


class MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old name and loads it as the module of the new name (imported there if need be)."""

    def __init__(self) -> None:
        self._own_specs: dict[str, ModuleSpec | None] = {}  # new name -> its module's spec, from create to exec

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith("graphcost."):
            return None  # first on sys.meta_path: every other package's imports pass straight on
        new = new_name(fullname)
        target_spec = importlib.util.find_spec(new) if new is not None else None
        if target_spec is None:
            return None  # not moved, or nothing at the new path either: the usual ModuleNotFoundError
        return importlib.util.spec_from_loader(fullname, self,
                                               is_package=target_spec.submodule_search_locations is not None)

    def create_module(self, spec) -> ModuleType:
        new = new_name(spec.name)
        assert new is not None
        warnings.warn(f"{spec.name} moved to {new}; the old name goes in the release after next",
                      DeprecationWarning, stacklevel=2)
        module = importlib.import_module(new)
        self._own_specs[new] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        """The import system set the module's __spec__ to the alias's: give it back its own."""
        module.__spec__ = self._own_specs.pop(module.__name__)


def install() -> None:
    """Put the finder first on `sys.meta_path` (once)."""
    if not any(isinstance(f, MovedModuleFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, MovedModuleFinder())
