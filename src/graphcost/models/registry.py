"""Model names -> constructors, and rebuilding a model from a saved spec.

    model = build_model("tgraph", "layout", hidden=128)
    register("my-gnn", MyConfig, ("layout",), lambda kind, config: MyGNN(kind, config))  # a new model
    spec = model_spec(model)          # {"name": ..., "kind": ..., "config": {...}} (JSON-able)
    same = model_from_spec(spec)      # same architecture (load the state_dict separately)

Every model: ``model(batch: GraphBatch) -> Tensor (B,)``, lower score = predicted faster;
``model.config`` is a dataclass, ``model.name`` and ``model.kind`` are strings.
"""

from __future__ import annotations

import dataclasses
import typing
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
MODEL_NAMES: tuple[str, ...] = tuple(_MODELS)  # the models graphcost ships (`model_names`: with registered ones)
# config fields added after models were first saved: a saved spec without one means the old behaviour
LEGACY_DEFAULTS: dict[str, dict[str, Any]] = {
    "tgraph": {"cross_scale": "softmax", "change_features": False, "readout": "mean"},
}


def register(name: str, config_cls: type, kinds: tuple[str, ...], make: Callable[[str, Any], nn.Module]) -> None:
    """Make model `name` known to `build_model`, `model_from_spec` and training: `make(kind, config)` builds it
    for one of `kinds` ("layout", "tile") from an instance of the dataclass `config_cls`; a name registered
    before is replaced."""
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"a model's name must be a non-empty string, got {name!r}")
    if not dataclasses.is_dataclass(config_cls) or not isinstance(config_cls, type):
        raise ValueError(f"model {name!r}: config_cls must be a dataclass, got {config_cls!r}")
    if isinstance(kinds, str) or not kinds or not set(kinds) <= {"layout", "tile"}:
        raise ValueError(f"model {name!r}: kinds must be a non-empty tuple of 'layout' / 'tile', got {kinds!r}")
    if not callable(make):
        raise ValueError(f"model {name!r}: make must be callable, got {make!r}")
    _MODELS[name] = (config_cls, tuple(kinds), make)


def model_names() -> tuple[str, ...]:
    """Every known model: the shipped ones (`MODEL_NAMES`), then the registered ones."""
    return tuple(_MODELS)


def model_kinds(name: str) -> tuple[str, ...]:
    """The kinds ("layout", "tile") that model `name` supports."""
    return _entry(name)[1]


def _entry(name: str):
    if name not in _MODELS:
        raise ValueError(f"unknown model {name!r}; choose one of {', '.join(_MODELS)}")
    return _MODELS[name]


def build_model(name: str, kind: str, **config: Any) -> nn.Module:
    """Build model `name` for `kind` with config fields overriding the defaults."""
    config_cls, kinds, make = _entry(name)
    if kind not in kinds:
        raise ValueError(f"model {name!r} does not support kind {kind!r} (supports: {', '.join(kinds)})")
    model = make(kind, config_cls(**coerce_config(name, config)))
    model.name, model.kind = name, kind
    return model


_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def _coerce_value(value: Any, kind: type) -> Any:
    """`value` as a `kind` (int, float, bool or str); raises TypeError/ValueError when it is not one."""
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
            return value.strip().lower() in _TRUE
        raise ValueError
    if kind is int:
        if isinstance(value, bool):
            raise ValueError
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            return int(value.strip())
        raise ValueError
    if kind is float:
        if isinstance(value, bool):
            raise ValueError
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            return float(value.strip())
        raise ValueError
    if kind is str:
        if isinstance(value, str):
            return value
        raise ValueError
    return value  # other annotations: passed through unchecked


def coerce_config(name: str, config: dict) -> dict:
    """Check `config` against model `name`'s config dataclass: unknown fields are rejected and each
    value is converted to its field's type (int, float, bool, str), e.g. "64" -> 64 for `hidden`.

    Raises ValueError naming the option, e.g. ``model 'tgraph': option hidden='abc' must be an int``.
    """
    config_cls = _entry(name)[0]
    fields = {f.name for f in dataclasses.fields(config_cls)}
    unknown = sorted(set(config) - fields)
    if unknown:
        raise ValueError(f"model {name!r}: unknown config field(s) {unknown}; valid: {sorted(fields)}")
    hints = typing.get_type_hints(config_cls)
    out = {}
    for key, value in config.items():
        kind = hints.get(key)
        try:
            out[key] = _coerce_value(value, kind)
        except (TypeError, ValueError):
            label = getattr(kind, "__name__", str(kind))
            raise ValueError(f"model {name!r}: option {key}={value!r} must be of type {label}") from None
    return out


def model_spec(model: nn.Module, name: str | None = None, kind: str | None = None) -> dict:
    """JSON-serialisable description that `model_from_spec` turns back into the same architecture.

    `name` and `kind` default to the model's own (`build_model` sets them); the trainer passes the
    names it built the model under, so a stand-in model without them still gets a spec."""
    return {"name": name or model.name, "kind": kind or model.kind, "config": dataclasses.asdict(model.config)}


def model_from_spec(spec: dict) -> nn.Module:
    """Rebuild a model from ``{"name", "kind", "config"}`` (as written by `model_spec`)."""
    missing = [k for k in ("name", "kind") if k not in spec]
    if missing:
        raise ValueError(f"model spec is missing key(s) {missing}: {spec!r}")
    config = {**LEGACY_DEFAULTS.get(spec["name"], {}), **spec.get("config", {})}
    return build_model(spec["name"], spec["kind"], **config)
