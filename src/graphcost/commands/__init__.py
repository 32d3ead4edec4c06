"""Thin CLI command modules; each exposes `register(app)` which adds its commands to a typer app."""

DEVICE_HELP = "auto (CUDA when present) | cpu | cuda | cuda:N"
THREADS_HELP = "torch CPU threads (0 = torch's default; on a busy machine, fewer threads than free cores: 1 on a shared 2-core box)"


def set_threads(n: int) -> None:
    """--threads: torch intra-op threads for this process (0 keeps torch's default)."""
    if n > 0:
        import torch

        torch.set_num_threads(n)
