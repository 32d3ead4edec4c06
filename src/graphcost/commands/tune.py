"""`graphcost tune`: make a user's JAX program faster with a cost model and a measurement budget.

Thin: checks the options, the program and the storage before anything in --out is touched (--out itself by
`graphcost.tuning.tuning_run_dir.tuning_run_dir`), then calls `graphcost.tuning.tune` with a `TuneConfig`. Error
messages never show a storage password.
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn, Optional

import typer

from graphcost.atomic import OutputExistsError, OutputPathError
from graphcost.bounds import MEASUREMENTS_MAX, PROCESSES_MAX, REPEATS_MAX, SECONDS_MAX, SEED_MAX
from graphcost.commands.common import fail
from graphcost.commands.interrupts import interrupt_says, terminate_as_interrupt
from graphcost.tuning import defaults as D

# the names of `graphcost.tuning.tuning_run_dir.tuning_run_dir`'s arguments in this command's messages
NAMES = {"out": "--out", "resume": "--resume", "overwrite": "--overwrite"}


def _fail(message: str, code: int = 1) -> NoReturn:
    """`fail` with any storage URL's password masked."""
    from graphcost.tuning.study import mask_url

    fail(mask_url(message), code)


def register(app: typer.Typer) -> None:
    """Add `tune` to `app`."""

    @app.command("tune")
    @interrupt_says("interrupted before any measurement: nothing was saved")
    def tune_cmd(
        program: str = typer.Argument(..., metavar="PROGRAM", help="The program: FILE.py:FUNCTION or MODULE:FUNCTION, where FUNCTION() "
                                      "returns (fn, example_args); or an XLA module: MODULE.pb (HloModuleProto), "
                                      "MODULE.hlo (text) or an XLA_FLAGS=--xla_dump_to directory."),
        inputs: Optional[Path] = typer.Option(None, "--inputs", help="XLA module programs only: its arguments, an npz "
                                              "of arg0, arg1, ... (default: seeded random arguments)."),
        space: str = typer.Option(D.SPACE, help="flags (XLA CPU compiler options) | layout (per-node layouts of "
                                  "dot / convolution / reshape) | both."),
        budget: int = typer.Option(D.BUDGET, min=1, max=MEASUREMENTS_MAX, help="Configurations measured per strategy (failed ones count)."),
        model: list[Path] = typer.Option([], "--model", help="Trained cost model run (repeatable: a tile model for "
                                         "flags, a layout model for layouts); default: the models that ship with "
                                         "graphcost."),
        strategy: list[str] = typer.Option([], "--strategy", help="hedged | model+online | model | tpe | "
                                           "random | kernels (repeatable; default hedged: each round split between "
                                           "the model, guided by --model or the shipped models, and TPE, the "
                                           "model's share earned on this program; tpe and random use no model; "
                                           "model+online the model alone; kernels compiles candidates and "
                                           "costs them with the shipped kernel model, corrected on each trial's "
                                           "kernels)."),
        online: str = typer.Option(D.LEARNER, help="model+online's per-program model: auto (effects for --space "
                                   "flags, tree for layout and both) | effects (Bayesian "
                                   "effects of each option and their interactions, the cost model's score as a "
                                   "prior; single-option probes first, then Thompson sampling) | tree (LightGBM on "
                                   "the configuration, with the cost model's score as a feature) | finetune (the cost "
                                   "model fine-tuned on this program's measurements)."),
        out: Path = typer.Option(Path("runs/tuned"), help="Output directory: study.db, trials.csv/json, best.json, "
                                 "result.json, progress.png, kernels.csv, kernels.png."),
        storage: Optional[str] = typer.Option(None, help="Optuna storage URL shared by several workers (e.g. "
                                              "postgresql://user@host/db); default sqlite in --out."),
        study: Optional[str] = typer.Option(None, "--study", help="Name of the study in the storage (default: the "
                                            "program file's stem); a new name starts a new study."),
        resume: bool = typer.Option(False, "--resume", help="Continue the study in an existing --out."),
        overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing --out."),
        round_size: int = typer.Option(D.ROUND_SIZE, min=1, max=MEASUREMENTS_MAX, help="Configurations measured together per round."),
        race: int = typer.Option(D.RACE, min=0, max=MEASUREMENTS_MAX, help="The best configurations so far timed again "
                                 "with every round and after the last (their in-search figure: the geometric mean; 0: off)."),
        processes: int = typer.Option(D.PROCESSES, min=1, max=PROCESSES_MAX, help="Fresh processes for the final check against the default."),
        rounds: int = typer.Option(D.ROUNDS, min=1, max=REPEATS_MAX, help="Timing rounds per batch (median over rounds)."),
        calls: int = typer.Option(D.CALLS, min=1, max=REPEATS_MAX, help="Calls per configuration per round (minimum kept)."),
        rtol: float = typer.Option(D.RTOL, min=0.0, help="Relative tolerance of the output check against the default."),
        atol: float = typer.Option(D.ATOL, min=0.0, help="Absolute tolerance (times max|default output|)."),
        allow_fast_math: bool = typer.Option(False, "--allow-fast-math", help="Let the flag search use the "
                                             "fast-math family: xla_cpu_enable_fast_math, its honor_* options, "
                                             "enable_fast_min_max (may change results; still checked)."),
        min_gain: float = typer.Option(D.MIN_GAIN, min=0.0, help="The best must beat the default by this share in every "
                                       "process of the final check, else the default is kept."),
        seed: int = typer.Option(D.SEED, min=0, max=SEED_MAX, help="Seed of the strategies and the visit order."),
        kernels: bool = typer.Option(True, "--kernels/--no-kernels", help="Profile the default's kernels before "
                                     "the search (shown), every trial's (kernels.csv) and the kept configuration's "
                                     "(result.json, kernels.png)."),
        ablation: bool = typer.Option(True, "--ablation/--no-ablation", help="Re-measure the kept configuration "
                                      "without each of its changes: which ones carry the speedup (result.json)."),
        prepare_timeout: float = typer.Option(600.0, min=1.0, max=SECONDS_MAX, help="Seconds the program's preparation (import, "
                                              "make(), tracing, compiling and one call of the default, in a fresh "
                                              "process) may take."),
    ) -> None:
        """Search compiler configurations of your program within a budget of real measurements.

        Every configuration is compiled, its outputs checked against the default's, and timed
        against the default. The best is re-measured in fresh processes and kept only if it
        beats the default beyond the noise. Apply it with graphcost.compile_with(fn, "OUT/best.json").
        """
        from graphcost.tuning.space import SPACES
        from graphcost.tuning.strategies import ONLINE_LEARNERS, STRATEGIES

        if online not in ONLINE_LEARNERS:
            _fail(f"--online must be one of {', '.join(ONLINE_LEARNERS)}, got {online!r}")
        if space not in SPACES:
            _fail(f"--space must be one of {', '.join(SPACES)}, got {space!r}")
        for s in strategy:
            if s not in STRATEGIES:
                _fail(f"--strategy must be one of {', '.join(STRATEGIES)}, got {s!r}")
        for run in model:
            if not run.exists():
                _fail(f"--model {run}: no such run directory or checkpoint")
        if study is not None and not study.strip():
            _fail("--study must be a non-empty name")
        from graphcost.frontend.programs import hlo_program

        try:
            program = hlo_program.with_inputs(program, inputs)
        except ValueError as exc:
            _fail(str(exc))
        if note := hlo_program.picked(program):
            typer.echo(note, err=True)
        from graphcost.tuning.tuning_run_dir import tuning_run_dir

        try:  # the library checks --out (a tuning run, or new or empty; --overwrite replaces only a tuning run)
            run_dir = tuning_run_dir(out, program, overwrite=overwrite, resume=resume, storage=storage, names=NAMES)
        except (OutputExistsError, OutputPathError, FileNotFoundError) as exc:
            _fail(str(exc))

        from graphcost.frontend.programs.jax_program import require_jax

        try:
            require_jax()
        except ImportError as exc:
            _fail(str(exc), code=2)
        from graphcost.measure.interleaved import TimingProtocol
        from graphcost.tuning.program import ProgramError, load_program, prepare_program
        from graphcost.tuning.program_check import check_in_child
        from graphcost.tuning.study import open_storage
        from graphcost.tuning.tuner import TuneConfig, TuneInterrupted, tune

        # everything is checked before anything in --out is removed: the program, make(), its arguments, the storage
        try:
            check_in_child(program, prepare_timeout)  # os.abort(), an endless loop: reported, not suffered
            fn, args, name = load_program(program)
            prepared = prepare_program(fn, args, name, program)
            if storage is not None:
                open_storage(storage)
            from graphcost.tuning.space import make_space
            from graphcost.tuning.tuner import resolve_models

            sp = make_space(space, prepared, allow_fast_math)
            runs, _, _ = resolve_models(TuneConfig(model=[str(m) for m in model],
                                                      strategies=list(strategy) or None), sp)
            if runs:  # each run loads and fits the space (tune loads them again: cheap, and nothing is lost)
                from graphcost.tuning.scoring import GraphModelScorer

                GraphModelScorer(runs, prepared, sp)
        except (ProgramError, ValueError, OSError) as exc:  # OSError: a --model run without a checkpoint
            _fail(str(exc))
        except KeyboardInterrupt:
            typer.echo("\ninterrupted while loading the program, before any measurement: nothing was saved", err=True)
            raise typer.Exit(130)
        try:
            with run_dir:  # locked until the run ends (a second run into --out is refused); emptied with --overwrite
                config = TuneConfig(space=space, budget=budget, model=[str(m) for m in model],
                                    strategies=list(strategy) or None, out=out, storage=storage, program_ref=program,
                                    name=study or name, seed=seed, round_size=round_size, race=race,
                                    processes=processes, protocol=TimingProtocol(rounds=rounds, calls=calls,
                                                                           warmup=D.WARMUP, seed=seed),
                                    min_gain=min_gain, rtol=rtol, atol=atol, allow_fast_math=allow_fast_math,
                                    learner=online, kernels=kernels, ablation=ablation)
                with terminate_as_interrupt() as signal_seen:  # SIGTERM, too, releases the study's reservations
                    result = tune(prepared, config=config)
        except TuneInterrupted as exc:
            by = "interrupted" if signal_seen.name == "SIGINT" else f"interrupted by {signal_seen.name}"
            if exc.measured:
                typer.echo(f"\n{by}: the {exc.measured} configuration(s) this run measured are saved in "
                           f"{out} and its unfinished reservations released; re-run with --resume", err=True)
            else:
                typer.echo(f"\n{by} before this run measured any configuration: nothing new was saved",
                           err=True)
            raise typer.Exit(signal_seen.exit_code)
        except (ProgramError, ValueError, RuntimeError, OSError) as exc:  # OSError: a --model run without a checkpoint,
            _fail(str(exc))  # or --out held by another process
        failed = sum(t.status != "ok" for t in result.trials)
        typer.echo(f"{name}: {len(result.trials)} configurations measured ({failed} failed); {result.message}")
        if result.beats_default:
            opts = result.best.compiler_options
            typer.echo(f"best: {opts}" + (f" + {len(result.best.layouts)} layout constraints" if result.best.layouts else ""))
        extra = "".join(f", {f}" for f in ("kernels.csv", "kernels.png") if (out / f).exists())
        typer.echo(f"wrote {out}/best.json (apply: graphcost.compile_with(fn, '{out}/best.json')), trials.csv, "
                   f"progress.png{extra}")
