"""Per-epoch metrics of a training run, shared by `graphcost train` and `graphcost dag train`.

- `metrics.csv` in the run directory, always: one row per epoch, rewritten whole (atomically) after
  every epoch, so it matches the history stored in the checkpoint, also after `--resume`.
- TensorBoard scalars under `RUN/tensorboard/`, when the optional `tensorboard` package is installed
  (`pip install 'graphcost[tensorboard]'`); `purge_step` drops events a killed run wrote past the
  epoch it resumes from.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from graphcost.guards.atomic import atomic_write_text

METRICS_CSV = "metrics.csv"
TENSORBOARD_DIR = "tensorboard"


def write_csv_atomic(rows: Sequence[dict], path: Path) -> None:
    """Rewrite the whole metrics CSV through a temp file + os.replace (columns: union of the rows' keys,
    in first-seen order)."""
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(path, buf.getvalue())


def tensorboard_available() -> bool:
    """Whether `torch.utils.tensorboard` can be used (the `tensorboard` extra is installed)."""
    try:
        from torch.utils.tensorboard import SummaryWriter  # noqa: F401
    except ImportError:  # torch raises ImportError when the tensorboard package is missing
        return False
    return True


class MetricsLog:
    """metrics.csv (+ TensorBoard scalars) of one run directory; `log(history)` after every epoch."""

    def __init__(self, out_dir: str | Path, start_epoch: int = 0, tensorboard: bool | None = None):
        """`start_epoch`: epochs already done (resume); `tensorboard` None = when installed."""
        self.out_dir = Path(out_dir)
        self.writer = None
        if tensorboard or (tensorboard is None and tensorboard_available()):
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(log_dir=str(self.out_dir / TENSORBOARD_DIR), purge_step=start_epoch + 1)

    def log(self, history: Sequence[dict]) -> None:
        """Rewrite metrics.csv with every row of `history`; its last row (an epoch) goes to TensorBoard."""
        write_csv_atomic(history, self.out_dir / METRICS_CSV)
        if self.writer is not None and history:
            row = history[-1]
            for key, value in row.items():
                if key != "epoch" and isinstance(value, (int, float)):
                    self.writer.add_scalar(key, value, row["epoch"])
            self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None
