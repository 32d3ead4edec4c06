"""The old paths of moved packages (issue 66): the same module object under the old name, with a
DeprecationWarning naming the new one; nothing else aliased."""

from __future__ import annotations

import importlib
import sys

import pytest


@pytest.mark.parametrize(("old", "new"), [("graphcost.dag.io", "graphcost.layerdag.io"),
                                          ("graphcost.dag.quality", "graphcost.layerdag.quality"),
                                          ("graphcost.frontend.measure.interleaved", "graphcost.measure.interleaved"),
                                          ("graphcost.frontend.collect.jobs", "graphcost.collect.jobs"),
                                          ("graphcost.runs.schedule", "graphcost.runs.lr_schedule"),
                                          ("graphcost.dag.schedule", "graphcost.layerdag.denoising_schedule"),
                                          ("graphcost.data.datasets.tpugraphs", "graphcost.data.pyg.tpugraphs")])
def test_an_old_path_is_the_new_module_with_a_warning(old, new):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}"):
        module = importlib.import_module(old)
    assert module is importlib.import_module(new)
    assert module.__name__ == new and module.__spec__.name == new  # its own spec, not the alias's
    assert hasattr(module, "__path__") == hasattr(importlib.import_module(new), "__path__")


def test_from_import_of_a_class_through_the_old_package_is_the_same_class():
    from graphcost.layerdag.train import LayerDAGTrainConfig

    with pytest.warns(DeprecationWarning):
        from graphcost.dag.train import LayerDAGTrainConfig as Old
    assert Old is LayerDAGTrainConfig


def test_the_blend_s_names_moved_out_of_trees_are_the_same_objects_with_a_warning():
    from graphcost.inference import blend
    from graphcost.models import trees

    with pytest.warns(DeprecationWarning, match="graphcost.models.trees.choose_blend moved to graphcost.inference.blend"):
        assert trees.choose_blend is blend.choose_blend
    with pytest.warns(DeprecationWarning):
        from graphcost.models.trees import Blend
    assert Blend is blend.Blend
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        trees.nope  # noqa: B018


def test_a_name_under_an_old_path_that_exists_nowhere_is_not_found():
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("graphcost.dag.no_such_module")


def test_the_new_paths_import_without_a_warning(recwarn):
    for name in ("graphcost.layerdag.io", "graphcost.measure.interleaved", "graphcost.collect.jobs"):
        importlib.import_module(name)
    assert not [w for w in recwarn if "moved to" in str(w.message)]
