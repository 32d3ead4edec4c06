"""Where a program's time goes: its per-kernel times, cross-process, for the default and a tuned configuration.

`profile_program(ref, best=None)` times the program ``ref`` (``FILE.py:make`` or ``MODULE:make``,
`graphcost.frontend.programs.user_program`) in P fresh processes, as the tuner's final check does (the measuring
worker of `graphcost.measure.worker`, its job built by `graphcost.tuning.crossproc.
lower_tune_job`): each process times the configurations with the interleaved protocol, then makes a
profiled pass (`graphcost.measure.kernel_profile`). Kernels of one configuration are
joined over processes as the collection's kernel labels are (`graphcost.kernels.records.
combine_profiles`, level-median), and described from the configuration's optimized
module (`graphcost.frontend.hlo.kernels`), compiled in one more fresh process (`graphcost.tuning.crossproc.
describe_job`): what each is (fusion kind, library call, copy, loop), its executions per call and the user's
code it came from. The program is never loaded, traced or compiled in this process.

With `best` (a tuned configuration: `TunedConfig`, best.json or its dict), the default and the tuned
configuration are profiled side by side; `compare` pairs their kernels by fingerprint (the same
computation on the same layout), then by name.

The records are `graphcost.kernels.times`'s, the measurement `graphcost.tuning.crossproc`'s (the tuner
uses them too: `profile_cross_process` for the default before its search, `profile_in_process` for each round's
trials).

Coverage = the share of the profiled call's wall time inside leaf kernels; the rest is the
executor's dispatch and argument handling (small programs spend most of their time there).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from graphcost.kernels.times import ProgramProfile
from graphcost.measure.interleaved import TimingProtocol
from graphcost.tuning.crossproc import profile_cross_process

def profile_program(ref: str, best=None, processes: int = 3, protocol: TimingProtocol | None = None,
                    timeout_s: float | None = None, *, json_out: str | Path | None = None,
                    plot: str | Path | None = None, top: int = 15, overwrite: bool = False,
                    names: Mapping[str, str] | None = None) -> ProgramProfile:
    """The per-kernel profile of the program `ref`, and of `best` beside its default (module docstring).

    `json_out`: also write the profile there as JSON (`ProgramProfile.save`); `plot`: draw its `top` kernels'
    shares there (PNG, `graphcost.tuning.plot.plot_profile`). Both are checked before the program is loaded
    (`graphcost.guards.atomic.check_output_path`): an existing file without `overwrite` is an OutputExistsError; a
    directory, a path below a file, a device, a virtual or read-only file system an OutputPathError, each naming
    the argument (`names` maps ``json_out`` / ``plot`` / ``best`` to the names messages use: ``--json`` / ``--plot`` /
    ``--config``). A `best` path that is no file is a ValueError, after those checks.

    The program is first prepared and called once in a child process under deadlines
    (`graphcost.measure.program_check.check_program`): a ``make()`` that hangs or aborts, an endless loop, an
    out-of-memory is a ProgramError naming `ref`. Each measuring process then gets `timeout_s` seconds, or
    with None a deadline scaled from what that check measured (`ProgramCheck.worker_timeout`)."""
    from graphcost.guards.atomic import check_output_path
    from graphcost.guards.bounds import ArgumentError, check_path
    from graphcost.tuning.apply import _as_config, check_options
    from graphcost.tuning.arguments import check_tuned
    from graphcost.measure.child_call import run_in_child
    from graphcost.measure.program_check import check_program
    from graphcost.tuning.crossproc import described

    _check_arguments(processes, protocol, timeout_s, top, overwrite, names)
    outputs = {"json_out": json_out, "plot": plot}
    for key, path in outputs.items():
        if path is not None:
            check_output_path(check_path((names or {}).get(key, key), path), (names or {}).get(key, key), overwrite)
    if json_out is not None and plot is not None and Path(json_out).resolve() == Path(plot).resolve():
        raise ArgumentError(f"{(names or {}).get('plot', 'plot')} {plot}: the same file as "
                            f"{(names or {}).get('json_out', 'json_out')}; the plot would replace the JSON")
    if isinstance(best, (str, Path)) and not Path(best).is_file():
        raise ArgumentError(f"{(names or {}).get('best', 'best')} {best}: no such file (a best.json written by "
                         "graphcost tune)")
    space_name, labels, codes = "flags", ["default"], []
    where: str | Path = ""  # the tuned configuration, in messages
    if best is not None:  # checked before the program runs
        cfg = _as_config(best)
        where = best if isinstance(best, (str, Path)) else "the tuned configuration"
        check_tuned(cfg, where)
        check_options(cfg.compiler_options, where)
        space_name, labels, codes = cfg.space, ["default", "tuned"], [list(cfg.codes)]
    # someone else's code, never run here: prepared and called once in a child process under deadlines, then
    # its configurations checked and described (compiled) in another, then timed in `processes` more
    check = check_program(ref, run=True)
    timing = protocol or TimingProtocol(rounds=3, calls=5, warmup=2)  # profile_cross_process's default
    calls = len(labels) * (timing.rounds * timing.calls + timing.warmup + 20)  # 20: the profiled pass's most
    scaled, note = check.worker_timeout(len(labels), calls)
    timeout, note = (scaled, note) if timeout_s is None else (timeout_s, "")
    job = {"program": ref, "tune_space": space_name, "allow_fast_math": True, "codes": codes, "where": str(where)}
    description = run_in_child("graphcost.tuning.crossproc:describe_job", job, timeout, ref, "describing process",
                               note)
    if "refused" in description:
        raise ArgumentError(description["refused"])
    result = profile_cross_process(ref, space_name, description["configs"], labels, processes, protocol, True, None,
                                   timeout, timeout_note=note, described=described(description))
    if json_out is not None:
        result.save(Path(json_out))
    if plot is not None:
        from graphcost.tuning.plot import plot_profile

        plot_profile(result, Path(plot), top)
    return result


def _check_arguments(processes, protocol, timeout_s, top, overwrite, names) -> None:
    """`profile_program`'s counts, protocol, timeout and switches; ArgumentError naming the argument."""
    from graphcost.guards.bounds import PROCESSES_MAX, SECONDS_MAX, ArgumentError, check_int, check_real

    check_int("processes", processes, 1, PROCESSES_MAX)
    check_int("top", top, 1, 10_000)
    if timeout_s is not None:
        check_real("timeout_s", timeout_s, 0.0, SECONDS_MAX, lo_open=True)
    if protocol is not None and not isinstance(protocol, TimingProtocol):
        raise ArgumentError(f"protocol must be a TimingProtocol or None, got {type(protocol).__name__}")
    if not isinstance(overwrite, bool):
        raise ArgumentError(f"overwrite must be True or False, got {overwrite!r}")
    if names is not None and not isinstance(names, Mapping):
        raise ArgumentError(f"names must be a mapping of argument names or None, got {type(names).__name__}")


WIDTH = 120  # the table fits a 120-column terminal


def _origin(k, width: int) -> str:
    """``prog.py:6,7: dot_general, tanh``: where a kernel came from, cut to `width` characters."""
    lines, ops = k.origin.lines(), ", ".join(k.origin.short_ops())
    text = f"{lines}: {ops}" if lines and ops else lines or ops or "-"
    return text if len(text) <= width else text[: width - 1] + "…"


def _cut(text: str, width: int) -> str:
    return f"{text if len(text) <= width else text[: width - 1] + '…':{width}s}"


def _sums(config, listed: list, total: int, label: str) -> str:
    """``default: 3 of 7 kernels, 652.2 µs = 69.2% of its call``: what the listed kernels add up to."""
    return (f"{label}{len(listed)} of {total} kernels, {sum(config.call_ns(k) for k in listed) / 1e3:.1f} µs = "
            f"{sum(config.share(k) for k in listed):.1%} of {'its' if label else 'the'} call")


def _rest(configs) -> str:
    if any(c.kernel_share > 1 for c in configs):
        return "kernels running side by side add to more than the call"
    return "the rest is argument handling and dispatch"


def profile_table(result: ProgramProfile, top: int = 15) -> list[str]:
    """The lines `graphcost profile` prints: the call time, then the `top` kernels with their time in
    that call (`ConfigProfile.call_ns`), their share of it, what they are, how often they run and
    where they came from in the user's code; then what the listed kernels add up to (their times
    and shares sum to it) beside all kernels. With a tuned configuration, the kernels paired side by
    side, each stated in its own configuration's call. Every line fits `WIDTH` columns."""
    base = result.configs[0]
    processes = f"{result.processes} process{'es' if result.processes != 1 else ''}"
    out = [f"{result.program}: {base.runtime_ns / 1e3:.1f} µs per call (default, median of {processes})"]
    if len(result.configs) == 1:
        listed = base.kernels[:top]
        out += [f"µs/call = share × the call above; a share is of a profiled call ({base.wall_ns / 1e3:.1f} µs "
                "under the profiler)",
                f"{'kernel':28s} {'kind':16s} {'share':>6s} {'µs/call':>9s} {'runs':>5s}  source: ops"]
        for k in listed:
            out.append(f"{_cut(k.name, 28)} {_cut(k.kind, 16)} {base.share(k):6.1%} {base.call_ns(k) / 1e3:9.1f} "
                       f"{k.executions:5d}  {_origin(k, WIDTH - 71)}")
        out += [f"listed: {_sums(base, listed, len(base.kernels), '')}",
                f"all kernels: {base.kernel_share:.1%} of the call (leaf kernels {base.coverage:.1%}); "
                f"{_rest([base])}"]
        return out
    from graphcost.kernels.times import compare

    tuned = result.configs[1]
    pairs = compare(base, tuned)[:top]
    out += [f"tuned: {tuned.runtime_ns / 1e3:.1f} µs per call ({base.runtime_ns / tuned.runtime_ns:.3f}x)",
            "a kernel's µs = its share of a profiled call × its configuration's call time above",
            f"{'kernel (default)':26s} {'kind':14s} {'default µs':>10s} {'tuned µs':>9s} {'tuned kernel':24s}  "
            "source: ops"]
    for d, t in pairs:
        either = d if d is not None else t
        out.append(f"{_cut(d.name if d else '-', 26)} {_cut(either.kind if either else '?', 14)} "
                   f"{(f'{base.call_ns(d) / 1e3:10.1f}' if d else '         -')} "
                   f"{(f'{tuned.call_ns(t) / 1e3:9.1f}' if t else '        -')} {_cut(t.name if t else '-', 24)}  "
                   f"{_origin(either, WIDTH - 90) if either is not None else '-'}")
    listed_d, listed_t = [d for d, _ in pairs if d is not None], [t for _, t in pairs if t is not None]
    out += [f"listed, {_sums(base, listed_d, len(base.kernels), 'default: ')}",
            f"listed, {_sums(tuned, listed_t, len(tuned.kernels), 'tuned: ')}",
            f"all kernels: default {base.kernel_share:.1%} (leaf {base.coverage:.1%}), tuned {tuned.kernel_share:.1%} "
            f"(leaf {tuned.coverage:.1%}) of their calls",
            _rest([base, tuned])]
    return out
