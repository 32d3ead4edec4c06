"""CLI: graphcost collect — measure real configurations of JAX zoo programs on this machine."""

import os
from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    """Add this module's commands to `app`."""

    @app.command("collect")
    def collect_cmd(
        programs: str = typer.Option("mlp", help="Comma-separated zoo selectors: families (mlp, cnn, tfenc, tfdec, "
                                     "lstm, gru), groups (transformer, rnn), name prefixes (tfenc, tfdec, lstm, gru, mlp-d3) or exact variant names."),
        out: Path = typer.Option(Path("collected"), help="Output directory (split subdirs + manifest.json)."),
        configs: int = typer.Option(8, min=1, help="Configurations per program."),
        space: str = typer.Option("layout", help="layout (per-node layouts, layout schema) or flags "
                                  "(XLA CPU compiler options, tile schema)."),
        mode: str = typer.Option("random", help="Layout search mode: random or default (mutations of the default)."),
        rounds: int = typer.Option(5, min=1, help="Timing rounds (median over rounds)."),
        calls: int = typer.Option(10, min=1, help="Calls per configuration per round (minimum kept)."),
        warmup: int = typer.Option(2, min=0, help="Warm-up calls per configuration."),
        limit: int = typer.Option(6, min=0, help="At most this many programs (a seeded sample of the cheaper half of each "
                                 "selected family, spread over families); 0 = all."),
        single_thread: bool = typer.Option(True, "--single-thread/--multi-thread", help="Run XLA's CPU kernels "
                                           "single-threaded (--xla_cpu_multi_thread_eigen=false): far less "
                                           "sensitive to preemption on a shared machine."),
        compile_workers: int = typer.Option(2, min=1, help="Threads compiling configurations in parallel."),
        seed: int = typer.Option(0, help="Seed for program sampling, splits, configurations and visit order."),
        list_only: bool = typer.Option(False, "--list", help="Print the selected program names and exit."),
    ) -> None:
        """Compile and time real configurations of JAX/Flax programs; write TpuGraphs-schema npz files.

        Resumable: re-running the same command skips finished graphs. Needs the optional jax extra
        of graphcost (jax, jaxlib, flax, optax).
        """
        if space not in ("layout", "flags"):
            raise typer.BadParameter(f"--space must be 'layout' or 'flags', got {space!r}")
        if mode not in ("random", "default"):
            raise typer.BadParameter(f"--mode must be 'random' or 'default', got {mode!r}")
        from graphcost.frontend.collect import CollectOptions, collect, select_programs
        from graphcost.frontend.jax_program import require_jax
        from graphcost.frontend.measure import Protocol

        try:
            specs = select_programs(programs, limit=limit, seed=seed)
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from exc
        if list_only:
            for s in specs:
                typer.echo(s.name)
            return
        if single_thread:  # must be set before JAX initialises its CPU backend
            flag = "--xla_cpu_multi_thread_eigen=false"
            if flag not in os.environ.get("XLA_FLAGS", ""):
                os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + flag).strip()
        try:
            require_jax()
        except ImportError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from exc
        options = CollectOptions(space=space, mode=mode, configs=configs, seed=seed,
                                 protocol=Protocol(rounds=rounds, calls=calls, warmup=warmup, seed=seed),
                                 compile_workers=compile_workers)
        try:
            manifest = collect(specs, out, options)
        except KeyboardInterrupt:
            typer.echo(f"\ninterrupted: finished graphs are saved in {out}; re-run the same command to resume", err=True)
            raise typer.Exit(130)
        except ValueError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(1) from exc
        graphs = manifest["graphs"]
        spreads = [g["spread"] for g in graphs.values()]
        typer.echo(f"{len(graphs)} graphs in {out} ({space}); runtime spread (slowest/fastest) "
                   f"median {sorted(spreads)[len(spreads) // 2]:.2f}x" if spreads else f"no graphs in {out}")
