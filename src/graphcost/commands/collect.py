"""`graphcost collect`: measure real configurations of JAX zoo programs on this machine (or a Ray
cluster) and write them as TpuGraphs-schema npz files. Thin: checks the options, calls
`graphcost.collect.local` (or `.ray_backend`), whose verbs check --out, --cache-dir and --configs
themselves (`graphcost.collect.guard`), prints the summary.
"""

import os
from pathlib import Path

import typer

from graphcost.guards.bounds import MEASUREMENTS_MAX, PROCESSES_MAX, REPEATS_MAX, SECONDS_MAX, SEED_MAX
from graphcost.commands.common import fail
from graphcost.commands.numbers import threads_bound

# the names of the library's arguments in the messages of this command (`graphcost.collect.guard`)
NAMES = {"out_dir": "--out", "cache_dir": "--cache-dir", "configs": "--configs"}


def _options(space, mode, configs, seed, rounds, calls, warmup, processes, measure_core, max_load, max_wait,
             compile_workers, cache_dir, label, kernels=False):
    """The `CollectOptions` of the command line."""
    from graphcost.collect.jobs import CollectOptions
    from graphcost.measure.cross_process import CrossProcess
    from graphcost.measure.interleaved import TimingProtocol

    return CollectOptions(space=space, mode=mode, configs=configs, seed=seed, label=label,
                          protocol=TimingProtocol(rounds=rounds, calls=calls, warmup=warmup, seed=seed),
                          cross=CrossProcess(processes=processes, measure_core=measure_core, max_load=max_load,
                                             max_wait_s=max_wait),
                          compile_workers=compile_workers, cache_dir=cache_dir, kernels=kernels)


ACTIONS = ("measure", "repeat", "relabel", "annotate", "add-processes")


def _action(action: str, **old_flags: bool) -> str:
    """--action, or the one deprecated flag that names it (--repeat, --relabel, --annotate, --add-processes; a
    warning on stderr); a usage error for an unknown action or two of them."""
    if action not in ACTIONS:
        raise typer.BadParameter(f"--action must be one of {', '.join(ACTIONS)}, got {action!r}")
    named = [name.replace("_", "-") for name, on in old_flags.items() if on]
    if not named:
        return action
    if len(named) > 1 or action != "measure":
        taken = [f"--{n}" for n in named] + ([f"--action {action}"] if action != "measure" else [])
        raise typer.BadParameter(f"{' and '.join(taken)}: one action at a time")
    typer.echo(f"warning: --{named[0]} is deprecated (it goes in the release after next); use --action {named[0]}",
               err=True)
    return named[0]


def register(app: typer.Typer) -> None:
    """Add this module's commands to `app`."""

    @app.command("collect")
    def collect_cmd(
        programs: str = typer.Option(
            "mlp", help="Comma-separated zoo selectors: families (25: mlp, cnn, tfenc, tfdec, vit, bert, gnn, ...; "
            "graphcost.frontend.programs.zoo), groups (transformer, rnn), name prefixes (tfenc, tfdec, lstm, gru, "
            "mlp-d3), exact variant names, or XLA modules: MODULE.pb (HloModuleProto), MODULE.hlo text or an "
            "XLA_FLAGS=--xla_dump_to directory (its module before optimizations; inputs generated from the entry "
            "parameters, or MODULE.pb?inputs=FILE.npz)."),
        out: Path = typer.Option(Path("runs/collected"), help="Output directory (split subdirs + manifest.json)."),
        configs: int = typer.Option(8, min=1, max=MEASUREMENTS_MAX, help="Configurations per program."),
        space: str = typer.Option("layout", help="layout (per-node layouts, layout schema) or flags "
                                  "(XLA CPU compiler options, tile schema)."),
        mode: str = typer.Option("both", help="Search mode. Layout: random, default (mutations of the default) or "
                                 "both (half each; the random half moves the same number of tensors in several "
                                 "configurations). Flags: both (half every option at random, half 1-3 options "
                                 "changed, the fast-math family included) or tuner (as graphcost tune spreads its "
                                 "candidates: half a random share of the options changed, half 1-3; fast-math at "
                                 "its default)."),
        rounds: int = typer.Option(5, min=1, max=REPEATS_MAX, help="Timing rounds (median over rounds)."),
        calls: int = typer.Option(10, min=1, max=REPEATS_MAX, help="Calls per configuration per round (minimum kept)."),
        warmup: int = typer.Option(2, min=0, max=REPEATS_MAX, help="Warm-up calls per configuration."),
        limit: int = typer.Option(6, min=0, help="At most this many programs (a seeded sample of the cheaper half of each "
                                 "selected family, spread over families); 0 = all."),
        single_thread: bool = typer.Option(True, "--single-thread/--multi-thread", help="Run XLA's CPU kernels "
                                           "single-threaded (--xla_cpu_multi_thread_eigen=false): far less "
                                           "sensitive to preemption on a shared machine."),
        compile_workers: int = typer.Option(2, min=1, callback=threads_bound, help="Threads compiling configurations in parallel."),
        processes: int = typer.Option(3, min=1, max=PROCESSES_MAX, help="Fresh measuring processes per graph; the label combines "
                                      "them (--label; cross-process protocol)."),
        label: str = typer.Option("level-median", help="How the processes' runtimes combine into a label: level-median "
                                  "(each process's runtimes divided by its median runtime first, so one process that ran "
                                  "slower throughout does not reorder close configurations; then the median over processes) "
                                  "or median (the plain median over processes, as the oldest collections were labelled)."),
        action: str = typer.Option("measure", help="What to do with OUT. measure: collect the selected programs "
                                   "(resumes: finished graphs and processes are kept). The rest work on OUT's finished "
                                   "graphs, with the parameters of OUT's collection, then stop: repeat (measure them "
                                   "again in new processes, an independent second collection stored as "
                                   "config_runtime_repeat_samples; see --repeat-share); relabel (recompute the labels "
                                   "from the stored per-process samples with --label; nothing is measured); annotate "
                                   "(add what the compiler did, config_compiled_stats: bytes of copies and transposes, "
                                   "kernels, where missing; nothing is measured); add-processes (raise OUT to "
                                   "--processes: measure the missing processes of every graph and its repeat, recompute "
                                   "the labels)."),
        measure_core: int = typer.Option(None, help="Core the measuring processes are pinned to (default: the last "
                                         "one); -1 = do not pin."),
        max_load: float = typer.Option(None, min=0.0, help="Wait before a measuring process while the 1-minute load "
                                       "average is above this (default: cores - 0.5)."),
        max_wait: float = typer.Option(300.0, min=0.0, max=SECONDS_MAX, help="Wait at most this many seconds for a quiet machine, "
                                       "then measure anyway (recorded in the manifest)."),
        cache_dir: Path = typer.Option(None, help="JAX persistent compilation cache shared by the driver and the "
                                       "measuring processes (default: OUT/.work/jax-cache, removed when done)."),
        repeat_share: float = typer.Option(1.0, min=0.0, max=1.0, help="With --action repeat: repeat only "
                                           "this share of the finished graphs of each measuring session (at least one each; "
                                           "a pause of over 15 min starts a new session), spread over families; graphs "
                                           "repeated earlier count towards it."),
        seed: int = typer.Option(0, min=0, max=SEED_MAX, help="Seed for program sampling, splits, configurations and visit order."),
        backend: str = typer.Option("local", help="local (this machine) or ray (compile and measure tasks on a Ray "
                                    "cluster; needs graphcost[ray] and nodes offering the resource graphcost_measure)."),
        ray_address: str = typer.Option(None, help="Ray cluster address for --backend ray (e.g. auto); default: a "
                                        "local Ray instance on this machine."),
        kernels: bool = typer.Option(False, "--kernels", help="Also time every compiled kernel: each measuring "
                                     "process makes a profiled pass after its timed calls, and each program gets a kernel "
                                     "record (OUT/kernels/SPLIT/PROGRAM.npz: per configuration and kernel its self time, "
                                     "executions per call, fingerprint, kind, analytical cost and graph). `graphcost data "
                                     "kernels OUT` turns records into a kernel dataset."),
        list_only: bool = typer.Option(False, "--list", help="Print the selected program names and exit."),
        relabel: bool = typer.Option(False, "--relabel", hidden=True, help="Deprecated: --action relabel."),
        annotate: bool = typer.Option(False, "--annotate", hidden=True, help="Deprecated: --action annotate."),
        add_processes: bool = typer.Option(False, "--add-processes", hidden=True, help="Deprecated: --action add-processes."),
        repeat: bool = typer.Option(False, "--repeat", hidden=True, help="Deprecated: --action repeat."),
    ) -> None:
        """Compile and time real configurations of JAX/Flax programs; write TpuGraphs-schema npz files.

        Each label combines --processes fresh measuring processes pinned to one core (the
        cross-process protocol; --label says how); the per-process runtimes are stored too. Resumable: re-running the
        same command skips finished graphs and finished processes. Needs the optional jax extra
        of graphcost (jax, jaxlib, flax, optax).
        """
        if space not in ("layout", "flags"):
            raise typer.BadParameter(f"--space must be 'layout' or 'flags', got {space!r}")
        if backend not in ("local", "ray"):
            raise typer.BadParameter(f"--backend must be 'local' or 'ray', got {backend!r}")
        action = _action(action, relabel=relabel, annotate=annotate, add_processes=add_processes, repeat=repeat)
        if not repeat_share > 0.0:
            raise typer.BadParameter(f"--repeat-share must be in (0, 1], got {repeat_share}")
        if repeat_share < 1.0 and action != "repeat":
            raise typer.BadParameter("--repeat-share needs --action repeat")
        if action != "measure" and backend != "local":
            raise typer.BadParameter(f"--action {action} works on OUT on this machine; it takes no --backend ray")
        if kernels and action != "measure":
            hint = " (measure a repeat into another --out)" if action == "repeat" else ""
            raise typer.BadParameter(f"--kernels times the kernels of new graphs (--action measure), not with --action "
                                     f"{action}{hint}")
        from graphcost.measure.cross_process import check_statistic

        try:
            check_statistic(label, "--label")
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from None
        if space == "layout" and mode not in ("random", "default", "both"):
            raise typer.BadParameter(f"--mode must be 'random', 'default' or 'both' for --space layout, got {mode!r}")
        from graphcost.frontend.programs.flags import FLAG_MODES

        if space == "flags" and mode not in FLAG_MODES:
            raise typer.BadParameter(f"--mode must be {' or '.join(map(repr, FLAG_MODES))} for --space flags, got {mode!r}")
        from graphcost.guards.atomic import OutputExistsError
        from graphcost.collect.jobs import select_programs
        from graphcost.collect.local import collect, repeat_collection
        from graphcost.errors import GraphcostError
        from graphcost.frontend.programs.jax_program import require_jax

        try:
            specs = select_programs(programs, limit=limit, seed=seed)
        except GraphcostError as exc:  # a module that cannot be read: the input's fault, not the command line's
            fail(str(exc))
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from exc
        if list_only:  # a dry run: the library checks --out and --cache-dir as a collection would
            from graphcost.collect.guard import check_collection_out

            try:
                check_collection_out(out, cache_dir, names=NAMES)
            except (ValueError, OutputExistsError) as exc:
                fail(str(exc))
            for s in specs:
                typer.echo(s.name)
            return
        if single_thread:  # must be set before JAX initialises its CPU backend
            flag = "--xla_cpu_multi_thread_eigen=false"
            if flag not in os.environ.get("XLA_FLAGS", ""):
                os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flag).strip()
        if action == "relabel":
            from graphcost.collect.local import relabel_collection

            try:
                manifest = relabel_collection(out, _options(space, mode, configs, seed, rounds, calls, warmup, processes,
                                                            measure_core, max_load, max_wait, compile_workers, cache_dir,
                                                            label), names=NAMES)
            except (ValueError, OutputExistsError) as exc:
                fail(str(exc))
            typer.echo(f"relabelled {len(manifest['graphs'])} graphs in {out} with the {label} over processes")
            return
        try:
            require_jax()
        except ImportError as exc:
            fail(str(exc), code=2)
        if measure_core is not None and measure_core != -1 and measure_core not in os.sched_getaffinity(0):
            raise typer.BadParameter(f"--measure-core {measure_core}: this process may only run on cores "
                                     f"{sorted(os.sched_getaffinity(0))}")
        options = _options(space, mode, configs, seed, rounds, calls, warmup, processes, measure_core, max_load,
                           max_wait, compile_workers, cache_dir, label, kernels)
        if action == "annotate":
            from graphcost.collect.local import annotate_collection

            try:
                manifest = annotate_collection(out, options, names=NAMES)
            except KeyboardInterrupt:
                typer.echo(f"\ninterrupted: the graphs annotated so far are saved in {out}; re-run to finish", err=True)
                raise typer.Exit(130)
            except (ValueError, RuntimeError, OutputExistsError) as exc:
                fail(str(exc))
            typer.echo(f"{len(manifest['graphs'])} graphs in {out} carry config_compiled_stats")
            return
        try:
            if action == "add-processes":
                from graphcost.collect.local import add_processes_collection

                manifest = add_processes_collection(out, options, names=NAMES)
            elif action == "repeat":
                manifest = repeat_collection(out, options, share=repeat_share, names=NAMES)
            elif backend == "ray":
                from graphcost.collect.ray_backend import collect_ray

                manifest = collect_ray(specs, out, options, address=ray_address,
                                       init_kwargs=None if ray_address else {"resources": {"graphcost_measure": 1}},
                                       names=NAMES)
            else:
                manifest = collect(specs, out, options, names=NAMES)
        except KeyboardInterrupt:
            typer.echo(f"\ninterrupted: finished graphs are saved in {out}; re-run the same command to resume", err=True)
            raise typer.Exit(130)
        except (ValueError, RuntimeError, ImportError, OutputExistsError) as exc:  # OutputExistsError: --out busy
            fail(str(exc))
        graphs = manifest["graphs"]
        spreads = [g["spread"] for g in graphs.values()]
        flagged = sorted(n for n, g in graphs.items() if g.get("flagged"))
        typer.echo(f"{len(graphs)} graphs in {out} ({space}); runtime spread (slowest/fastest) "
                   f"median {sorted(spreads)[len(spreads) // 2]:.2f}x" if spreads else f"no graphs in {out}")
        if flagged:
            typer.echo(f"{len(flagged)} graphs flagged as not separable by this machine (between-process noise "
                       f"comparable to the runtime spread): {', '.join(flagged)}")
