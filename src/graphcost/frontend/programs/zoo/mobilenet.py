"""MobileNet family: MobileNetV2-style networks of inverted residual blocks with BatchNorm.

An inverted residual block ("MobileNetV2: Inverted Residuals and Linear Bottlenecks",
arXiv:1801.04381) expands the channels with a 1x1 convolution, filters each channel with a
depthwise 3x3 convolution (``feature_group_count`` = channels) and projects back with a linear
1x1 convolution: ``y = x + BN(W_p * relu6(BN(dw3x3(relu6(BN(W_e * x))))))`` (residual only when
stride 1 and the channel count is unchanged). BatchNorm ("Batch Normalization: Accelerating Deep
Network Training by Reducing Internal Covariate Shift", arXiv:1502.03167) uses the running
statistics in forward (inference) programs and the batch statistics in training steps, which
return the updated running statistics along with the parameters (the program stays pure).

Names: ``mobilenet-n{blocks}-c{channels}-e{expansion}-r{resolution}-b{batch}-{fwd|train}``.
A stride-2 3x3 stem halves the resolution; block i outputs ``channels * 2**(i // 2)`` channels and
blocks 2, 4, ... downsample by 2. (XLA:CPU runs grouped convolutions slowly, hence the small sizes.)
"""

from __future__ import annotations

from graphcost.frontend.programs.zoo.common import ProgramSpec, grid

FAMILY = "mobilenet"
N_CLASSES = 10


def build(blocks: int, channels: int, expansion: int, resolution: int, batch: int, mode: str):
    import functools

    import flax.linen as nn
    import jax
    import jax.numpy as jnp
    import optax

    train = mode == "train"
    if mode not in ("fwd", "train"):
        raise ValueError(f"mode must be 'fwd' or 'train', got {mode!r}")
    norm = functools.partial(nn.BatchNorm, use_running_average=not train, momentum=0.9, epsilon=1e-5)

    class InvertedResidual(nn.Module):
        features: int
        stride: int

        @nn.compact
        def __call__(self, x):  # x: (B, H, W, Cin)
            hidden = x.shape[-1] * expansion
            y = nn.relu6(norm()(nn.Conv(hidden, (1, 1), use_bias=False)(x)))  # expand: (B, H, W, hidden)
            y = nn.Conv(hidden, (3, 3), strides=self.stride, padding="SAME", feature_group_count=hidden,
                        use_bias=False)(y)  # depthwise: (B, H/s, W/s, hidden)
            y = nn.relu6(norm()(y))
            y = norm()(nn.Conv(self.features, (1, 1), use_bias=False)(y))  # linear bottleneck: (B, H/s, W/s, F)
            if self.stride == 1 and x.shape[-1] == self.features:
                y = x + y
            return y

    class MobileNet(nn.Module):
        @nn.compact
        def __call__(self, x):  # x: (B, R, R, 3) NHWC
            x = nn.Conv(channels, (3, 3), strides=2, padding="SAME", use_bias=False)(x)  # stem: (B, R/2, R/2, C)
            x = nn.relu6(norm()(x))
            for i in range(blocks):
                x = InvertedResidual(channels * 2 ** (i // 2), 2 if i > 0 and i % 2 == 0 else 1)(x)
            x = nn.relu6(norm()(nn.Conv(4 * channels, (1, 1), use_bias=False)(x)))  # (B, R', R', 4C)
            return nn.Dense(N_CLASSES)(jnp.mean(x, axis=(1, 2)))  # (B, N_CLASSES)

    model = MobileNet()
    key = jax.random.PRNGKey(11)
    x = jax.random.normal(key, (batch, resolution, resolution, 3), jnp.float32)
    y = jax.random.randint(jax.random.PRNGKey(12), (batch,), 0, N_CLASSES)
    variables = model.init(jax.random.PRNGKey(0), x)  # {"params": ..., "batch_stats": ...}
    if not train:

        def forward(variables, x):
            return model.apply(variables, x)  # (B, N_CLASSES) logits

        return forward, (variables, x)

    tx = optax.sgd(1e-2, momentum=0.9)
    params, stats = variables["params"], variables["batch_stats"]
    opt_state = tx.init(params)

    def loss_fn(params, stats, x, y):
        logits, new = model.apply({"params": params, "batch_stats": stats}, x, mutable=["batch_stats"])
        logp = jax.nn.log_softmax(logits, axis=-1)
        return -jnp.mean(jnp.take_along_axis(logp, y[:, None], axis=-1)), new["batch_stats"]

    def train_step(params, stats, opt_state, x, y):
        (loss, stats), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, stats, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), stats, opt_state, loss

    return train_step, (params, stats, opt_state, x, y)


def variants() -> list[ProgramSpec]:
    out = []
    # (resolution, batch) pairs with the same number of pixels after the stem
    for g in grid(blocks=[2, 4], channels=[8, 16], expansion=[2, 4], shape=[(8, 4), (16, 1)], mode=["fwd", "train"]):
        hp = dict(blocks=g["blocks"], channels=g["channels"], expansion=g["expansion"], resolution=g["shape"][0],
                  batch=g["shape"][1], mode=g["mode"])
        name = (f"mobilenet-n{hp['blocks']}-c{hp['channels']}-e{hp['expansion']}-r{hp['resolution']}"
                f"-b{hp['batch']}-{hp['mode']}")
        out.append(ProgramSpec(name, FAMILY, hp, build))
    return out
