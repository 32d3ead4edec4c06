"""Where a program's time goes: its per-kernel times, cross-process, for the default and a tuned configuration.

`profile_program(ref, best=None)` times the program ``ref`` (``FILE.py:make`` or ``MODULE:make``,
`graphcost.tuning.program`) in P fresh processes, as the tuner's final check does (the measuring
worker of `graphcost.measure.worker`, its job built by `graphcost.tuning.crossproc.
lower_tune_job`): each process times the configurations with the interleaved protocol, then makes a
profiled pass (`graphcost.measure.kernel_profile`). Kernels of one configuration are
joined over processes as the collection's kernel labels are (`graphcost.collect.
kernel_records.combine_profiles`, level-median), and described from the configuration's optimized
module compiled here (`graphcost.frontend.hlo.kernels`): what each is (fusion kind, library call,
copy, loop) and its executions per call.

With `best` (a tuned configuration: `TunedConfig`, best.json or its dict), the default and the tuned
configuration are profiled side by side; `compare` pairs their kernels by fingerprint (the same
computation on the same layout), then by name.

The records and the measurement are `graphcost.tuning.kernel_times`'s (the tuner uses them too:
`profile_cross_process` for the default before its search, `profile_in_process` for each round's
trials).

Coverage = the share of the profiled call's wall time inside leaf kernels; the rest is the
executor's dispatch and argument handling (small programs spend most of their time there).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from graphcost.measure.interleaved import TimingProtocol
from graphcost.tuning.kernel_times import ProgramProfile, profile_cross_process

def profile_program(ref: str, best=None, processes: int = 3, protocol: TimingProtocol | None = None,
                    timeout_s: float = 900.0, *, json_out: str | Path | None = None, plot: str | Path | None = None,
                    top: int = 15, overwrite: bool = False, names: Mapping[str, str] | None = None) -> ProgramProfile:
    """The per-kernel profile of the program `ref`, and of `best` beside its default (module docstring).

    `json_out`: also write the profile there as JSON (`ProgramProfile.save`); `plot`: draw its `top` kernels'
    shares there (PNG, `graphcost.tuning.plot.plot_profile`). Both are checked before the program is loaded
    (`graphcost.atomic.check_output_path`): an existing file without `overwrite` is an OutputExistsError; a
    directory, a path below a file, a device, a virtual or read-only file system an OutputPathError, each naming
    the argument (`names` maps ``json_out`` / ``plot`` / ``best`` to the names messages use: ``--json`` / ``--plot`` /
    ``--config``). A `best` path that is no file is a ValueError, after those checks."""
    from graphcost.atomic import check_output_path
    from graphcost.bounds import ArgumentError
    from graphcost.tuning.apply import _as_config, check_options
    from graphcost.tuning.arguments import check_tuned
    from graphcost.tuning.program import load_program, prepare_program
    from graphcost.tuning.space import make_space

    outputs = {"json_out": json_out, "plot": plot}
    for key, path in outputs.items():
        if path is not None:
            check_output_path(path, (names or {}).get(key, key), overwrite)
    if json_out is not None and plot is not None and Path(json_out).resolve() == Path(plot).resolve():
        raise ArgumentError(f"{(names or {}).get('plot', 'plot')} {plot}: the same file as "
                            f"{(names or {}).get('json_out', 'json_out')}; the plot would replace the JSON")
    if isinstance(best, (str, Path)) and not Path(best).is_file():
        raise ValueError(f"{(names or {}).get('best', 'best')} {best}: no such file (a best.json written by "
                         "graphcost tune)")
    fn, args, name = load_program(ref)
    program = prepare_program(fn, args, name, ref)
    space_name, labels, codes = "flags", ["default"], []
    if best is not None:
        cfg = _as_config(best)
        where = best if isinstance(best, (str, Path)) else "the tuned configuration"
        check_tuned(cfg, where)
        check_options(cfg.compiler_options, where)
        space_name, labels, codes = cfg.space, ["default", "tuned"], [list(cfg.codes)]
    space = make_space(space_name, program)
    configs = [[0] * len(space.dims), *codes]
    result = profile_cross_process(ref, space_name, configs, labels, processes, protocol, True, None, timeout_s)
    if json_out is not None:
        result.save(Path(json_out))
    if plot is not None:
        from graphcost.tuning.plot import plot_profile

        plot_profile(result, Path(plot), top)
    return result
