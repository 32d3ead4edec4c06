"""Model names -> constructors, and rebuilding a model from a saved spec.

    model = build_model("tgraph", "layout", hidden=128)
    spec = model_spec(model)          # {"name": ..., "kind": ..., "config": {...}} (JSON-able)
    same = model_from_spec(spec)      # same architecture (load the state_dict separately)

Every model: ``model(batch: GraphBatch) -> Tensor (B,)``, lower score = predicted faster;
``model.config`` is a dataclass, ``model.name`` and ``model.kind`` are strings.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from torch import nn

from graphcost.models.kaufman import Kaufman, KaufmanConfig
from graphcost.models.tgraph import TGraph, TGraphConfig
from graphcost.models.tpugraphs_baselines import BaselineConfig, SageLayout, TileGNN, TileMLP

# name -> (config dataclass, kinds supported, constructor(kind, config))
_MODELS: dict[str, tuple[type, tuple[str, ...], Callable[[str, Any], nn.Module]]] = {
    "tgraph": (TGraphConfig, ("layout", "tile"), lambda k, c: TGraph(k, c)),
    "sage": (BaselineConfig, ("layout",), lambda k, c: SageLayout(k, c)),
    "tile-mlp": (BaselineConfig, ("tile",), lambda k, c: TileMLP(k, c)),
    "early-sage": (BaselineConfig, ("tile",), lambda k, c: TileGNN(k, c, "sage", "early")),
    "early-gcn": (BaselineConfig, ("tile",), lambda k, c: TileGNN(k, c, "gcn", "early")),
    "late-sage": (BaselineConfig, ("tile",), lambda k, c: TileGNN(k, c, "sage", "late")),
    "late-gcn": (BaselineConfig, ("tile",), lambda k, c: TileGNN(k, c, "gcn", "late")),
    "kaufman": (KaufmanConfig, ("layout", "tile"), lambda k, c: Kaufman(k, c)),
}
MODEL_NAMES: tuple[str, ...] = tuple(_MODELS)


def model_kinds(name: str) -> tuple[str, ...]:
    """The kinds ("layout", "tile") that model `name` supports."""
    return _entry(name)[1]


def _entry(name: str):
    if name not in _MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(MODEL_NAMES)}")
    return _MODELS[name]


def build_model(name: str, kind: str, **config: Any) -> nn.Module:
    """Build model `name` for `kind` with config fields overriding the defaults."""
    config_cls, kinds, make = _entry(name)
    if kind not in kinds:
        raise ValueError(f"model {name!r} does not support kind {kind!r} (supports: {', '.join(kinds)})")
    fields = {f.name for f in dataclasses.fields(config_cls)}
    unknown = sorted(set(config) - fields)
    if unknown:
        raise ValueError(f"model {name!r}: unknown config field(s) {unknown}; valid: {sorted(fields)}")
    model = make(kind, config_cls(**config))
    model.name, model.kind = name, kind
    return model


def model_spec(model: nn.Module) -> dict:
    """JSON-serialisable description that `model_from_spec` turns back into the same architecture."""
    return {"name": model.name, "kind": model.kind, "config": dataclasses.asdict(model.config)}


def model_from_spec(spec: dict) -> nn.Module:
    """Rebuild a model from ``{"name", "kind", "config"}`` (as written by `model_spec`)."""
    missing = [k for k in ("name", "kind") if k not in spec]
    if missing:
        raise ValueError(f"model spec is missing key(s) {missing}: {spec!r}")
    return build_model(spec["name"], spec["kind"], **spec.get("config", {}))
