"""The kernel path: a program's cost as the sum of its compiled kernels' costs.

records -> table -> trees -> model, each module one step:

* `records`: a collected program's kernel records (`graphcost collect --kernels`): every kernel of
  every configuration, timed by the profiled passes and identified from the optimized module;
  `card`: their lines in a collection's data card;
* `table`: a kernel collection read as one table (`KernelTable`), and the kernel dataset
  (`graphcost data kernels`);
* `trees`: the kernel trees, flag trees, roofline and sum rule, their features and their files;
* `model`: the shipped kernel model (`KernelCostModel`) that costs a compiled configuration;
* `fit`: the shipped kernel model's training recipe (`release/train_kernel_model.py`);
* `times`: per-kernel times of a program's configurations (`graphcost profile`, the tuner's kernel view);
* `report`: those times as a report: the default's top kernels beside a kept configuration's, kernels.csv;
* `scoring`: configurations of any space costed with the model (`KernelModelScorer`, given how to compile
  them and their flag vectors: the ``kernels`` search's, `graphcost.tuning.kernel_search`).

Floor: above `graphcost.measure` (profiled passes, timing protocol) and `graphcost.frontend`
(the kernels of an optimized module), below `graphcost.collect` and `graphcost.tuning`, which use it.
Nothing is imported here: import the modules themselves.
"""
