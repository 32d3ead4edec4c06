"""Shared pieces of the model zoo: the program spec record and forward / training-step builders.

A *program* is a pure function plus concrete example arguments, ready for `jax.jit`:
``fn(*args)``. Forward programs compute the model output; training programs compute one full
optimisation step (forward, backward via `jax.grad`, optimiser update with optax) and return
the new parameters, the new optimiser state and the loss.

JAX, Flax and optax are imported lazily (inside functions) because JAX is an optional extra.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass(frozen=True)
class ProgramSpec:
    """One named program variant of the zoo, e.g. ``mlp-d3-w256-b32-train``.

    `builder(**hparams)` returns ``(fn, args)``: a pure function and a tuple of example
    arguments (deterministic: parameters are initialised from a fixed PRNG seed).
    """

    name: str
    family: str
    hparams: dict[str, Any] = field(hash=False)
    builder: Callable[..., tuple[Callable, tuple]] = field(hash=False, repr=False)

    def build(self) -> tuple[Callable, tuple]:
        """Return ``(fn, args)`` for this variant."""
        return self.builder(**self.hparams)


def make_program(module, example_inputs: tuple, target, mode: str, loss: str, optimizer: str = "adam", seed: int = 0):
    """Turn a Flax module into a forward or training-step program.

    module: a `flax.linen.Module`; example_inputs: tuple of arrays passed to `module.apply`;
    target: labels for the loss (int classes for ``loss='xent'``, floats for ``loss='mse'``);
    mode: ``'fwd'`` or ``'train'``; optimizer: ``'adam'`` or ``'sgd'`` (optax).
    """
    import jax
    import jax.numpy as jnp
    import optax

    params = module.init(jax.random.PRNGKey(seed), *example_inputs)
    if mode == "fwd":

        def forward(params, *inputs):
            return module.apply(params, *inputs)

        return forward, (params, *example_inputs)
    if mode != "train":
        raise ValueError(f"mode must be 'fwd' or 'train', got {mode!r}")

    tx = optax.adam(1e-3) if optimizer == "adam" else optax.sgd(1e-2, momentum=0.9)
    opt_state = tx.init(params)

    def loss_fn(params, inputs, target):
        out = module.apply(params, *inputs)
        if loss == "xent":  # mean softmax cross-entropy over the batch (and sequence)
            logp = jax.nn.log_softmax(out, axis=-1)
            return -jnp.mean(jnp.take_along_axis(logp, target[..., None], axis=-1))
        return jnp.mean((out - target) ** 2)

    return optax_train_step(loss_fn, tx), (params, opt_state, tuple(example_inputs), target)


def optax_train_step(loss_fn, tx):
    """One optimisation step of `loss_fn(params, *batch)` with the optax transformation `tx`:
    ``train_step(params, opt_state, *batch) -> (new_params, new_opt_state, loss)``."""
    import jax
    import optax

    def train_step(params, opt_state, *batch):
        value, grads = jax.value_and_grad(loss_fn)(params, *batch)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value

    return train_step


def grid(**axes) -> list[dict[str, Any]]:
    """Cartesian product of keyword axes, as a list of dicts (deterministic order)."""
    import itertools

    keys = list(axes)
    return [dict(zip(keys, values)) for values in itertools.product(*(axes[k] for k in keys))]
