"""The per-kernel online learner moves a kernel model's predictions toward this program's measured kernels."""

from __future__ import annotations

import numpy as np

from graphcost.tuning.learners.kernel_residual import KernelObservation, KernelResidualLearner


def _program(seed=0):
    """A synthetic program: 30 kernels of 3 kinds whose true time is the model's prediction times a
    factor of its kind (another CPU) times its own factor; a configuration runs a random 20 of them,
    each slower or faster by a configuration effect of a few percent, plus a fixed overhead."""
    rng = np.random.default_rng(seed)
    kinds = ["loop fusion", "ynn fusion", "copy"]
    kind_factor = {"loop fusion": 2.0, "ynn fusion": 0.6, "copy": 1.3}
    kernels = [(f"k{i}", kinds[i % 3], float(rng.uniform(1e3, 1e5))) for i in range(30)]
    own = {f: float(np.exp(rng.normal(0, 0.3))) for f, _, _ in kernels}

    def config(c):
        r = np.random.default_rng(100 + c)
        chosen = [kernels[i] for i in r.choice(30, 20, replace=False)]
        obs = [KernelObservation(f, kind, t, t * kind_factor[kind] * own[f] * float(np.exp(r.normal(0, 0.03))))
               for f, kind, t in chosen]
        return obs, sum(o.measured_ns for o in obs) + 5e3

    return config


def _ape(pred, true):
    return float(np.median(np.abs(np.asarray(pred) / np.asarray(true) - 1)))


def test_a_few_measured_configurations_correct_the_kernel_predictions():
    config = _program()
    learner = KernelResidualLearner()
    for c in range(4):
        learner.observe(*config(c))
    held_out, runtime = config(99)
    prior = _ape([k.predicted_ns for k in held_out], [k.measured_ns for k in held_out])
    after = _ape([learner.corrected(k.fingerprint, k.kind, k.predicted_ns) for k in held_out],
                 [k.measured_ns for k in held_out])
    assert prior > 0.3 and after < 0.1  # the kind factors and each seen kernel's own factor are learned
    cost = learner.program_cost([(k.fingerprint, k.kind, k.predicted_ns) for k in held_out])
    assert abs(cost / runtime - 1) < 0.05 < abs(sum(k.predicted_ns for k in held_out) / runtime - 1)


def test_an_unseen_kernel_gets_its_kinds_correction_and_nothing_observed_changes_nothing():
    learner = KernelResidualLearner()
    assert learner.corrected("x", "copy", 100.0) == 100.0 and learner.overhead_ns() == 0.0
    for c in range(3):
        learner.observe([KernelObservation(f"c{c}", "copy", 100.0, 200.0),
                         KernelObservation(f"l{c}", "loop fusion", 100.0, 100.0)])
    unseen_copy = learner.corrected("new", "copy", 100.0)
    unseen_loop = learner.corrected("new2", "loop fusion", 100.0)
    assert 150 < unseen_copy < 200 and 95 < unseen_loop < 130  # shrunk toward the overall residual
    assert learner.corrected("c0", "copy", 100.0) > unseen_copy * 0.99  # its own measurement counts too
