"""`graphcost tune`: make a user's JAX program faster with a cost model and a measurement budget.

Thin: the options go to one library verb, `graphcost.tuning.tune_program.tune_program`, which checks them, the
program and the storage once, before anything in --out is touched, and tunes; its errors become one-line
messages naming the options (`NAMES`), never showing a storage password.
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn, Optional

import typer

from graphcost.guards.bounds import MEASUREMENTS_MAX, PROCESSES_MAX, REPEATS_MAX, SECONDS_MAX, SEED_MAX
from graphcost.commands.common import fail
from graphcost.commands.interrupts import interrupt_says, terminate_as_interrupt
from graphcost.tuning import defaults as D

# the names of `tune_program`'s arguments (the `TuneConfig` fields among them) in this command's messages
NAMES = {"out": "--out", "resume": "--resume", "overwrite": "--overwrite", "space": "--space", "budget": "--budget",
         "model": "--model", "strategies entry": "--strategy", "strategies": "--strategy", "storage": "--storage",
         "name": "--study", "seed": "--seed", "round_size": "--round-size", "race": "--race", "processes": "--processes",
         "confirm_processes": "--confirm-processes",
         "protocol.rounds": "--rounds", "protocol.calls": "--calls", "rtol": "--rtol", "atol": "--atol",
         "min_gain": "--min-gain", "allow_fast_math": "--allow-fast-math", "learner": "--online",
         "kernels": "--kernels", "ablation": "--ablation"}


def _strategy_names(incomplete: str) -> list[str]:
    """--strategy's completions: the registered strategies (`graphcost.tuning.strategies.register_strategy`)."""
    import graphcost.tuning.tuner  # noqa: F401  (registers the built-in strategies, ``kernels`` too)
    from graphcost.tuning.strategies import strategy_names

    return [s for s in strategy_names() if s.startswith(incomplete)]


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
                                         "graphcost (for flags, the kernel model's effect of each option on this "
                                         "program, from compiling each alone; for layouts, the layout model)."),
        strategy: list[str] = typer.Option([], "--strategy", help="hedged | model+online | model | tpe | "
                                           "random | kernels (repeatable; default hedged: each round split between "
                                           "the model, guided by --model or the shipped models, and TPE, the "
                                           "model's share earned on this program; tpe and random use no model; "
                                           "model+online the model alone; kernels compiles candidates and "
                                           "costs them with the shipped kernel model, corrected on each trial's "
                                           "kernels).", autocompletion=_strategy_names),
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
        confirm_processes: int = typer.Option(D.CONFIRM_PROCESSES, min=1, max=PROCESSES_MAX, help="Fresh processes "
                                              "the confirmation of the kept configuration grows to at most while "
                                              "they disagree (it starts with --processes)."),
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
        from graphcost.commands.interrupts import Interrupt
        from graphcost.errors import GraphcostError
        from graphcost.measure.interleaved import TimingProtocol
        from graphcost.tuning.tune_program import JaxMissing, LoadInterrupted, tune_program
        from graphcost.tuning.tuner import TuneInterrupted

        signal_seen = Interrupt()
        try:  # the library checks everything once, before anything in --out is touched (its messages: NAMES)
            name, result = tune_program(
                program, inputs=inputs, overwrite=overwrite, resume=resume, prepare_timeout=prepare_timeout,
                names=NAMES, say=lambda note: typer.echo(note, err=True),
                searching=lambda: terminate_as_interrupt(signal_seen),  # SIGTERM, too, releases the reservations
                space=space, budget=budget, model=[str(m) for m in model], strategies=list(strategy) or None,
                out=out, storage=storage, name=study, seed=seed, round_size=round_size, race=race,
                processes=processes, confirm_processes=confirm_processes, protocol=TimingProtocol(rounds=rounds, calls=calls, warmup=D.WARMUP, seed=seed),
                min_gain=min_gain, rtol=rtol, atol=atol, allow_fast_math=allow_fast_math, learner=online,
                kernels=kernels, ablation=ablation)
        except TuneInterrupted as exc:
            by = "interrupted" if signal_seen.name == "SIGINT" else f"interrupted by {signal_seen.name}"
            if exc.measured:
                typer.echo(f"\n{by}: the {exc.measured} configuration(s) this run measured are saved in "
                           f"{out} and its unfinished reservations released; re-run with --resume", err=True)
            else:
                typer.echo(f"\n{by} before this run measured any configuration: nothing new was saved",
                           err=True)
            raise typer.Exit(signal_seen.exit_code)
        except LoadInterrupted:
            typer.echo("\ninterrupted while loading the program, before any measurement: nothing was saved", err=True)
            raise typer.Exit(130)
        except JaxMissing as exc:
            _fail(str(exc), code=2)
        except (GraphcostError, ValueError, RuntimeError, OSError) as exc:  # OSError: a --model run without a
            _fail(str(exc))  # checkpoint, or --out held by another process
        failed = sum(t.status != "ok" for t in result.trials)
        typer.echo(f"{name}: {len(result.trials)} configurations measured ({failed} failed); {result.message}")
        if result.beats_default:
            opts = result.best.compiler_options
            typer.echo(f"best: {opts}" + (f" + {len(result.best.layouts)} layout constraints" if result.best.layouts else ""))
        extra = "".join(f", {f}" for f in ("kernels.csv", "kernels.png") if (out / f).exists())
        typer.echo(f"wrote {out}/best.json (apply: graphcost.compile_with(fn, '{out}/best.json')), trials.csv, "
                   f"progress.png{extra}")
