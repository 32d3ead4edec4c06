"""Rankings of a graph's configurations and the TpuGraphs Kaggle submission CSV.

Predictions are made on the de-duplicated configurations (TGraph §2.2.2), then mapped back to
the ORIGINAL file's configuration indices: a duplicate receives the score of its kept twin, so
it is ranked right next to it. Layout rows list every original index, predicted fastest first;
tile rows list the top 5 (the tile metric, TGraph eq. 10, looks at 5 candidates).

Submission format (Kaggle "Google - Fast or Slow? Predict AI Model Runtime"): header
``ID,TopConfigs``; ``ID`` is ``<collection>:<graph file stem>`` (e.g. ``layout:xla:default:foo``,
``tile:xla:bar``) and ``TopConfigs`` the indices joined by ``;``.

References:
    [TGraph] D. Khizbullin et al. Graph Neural Networks with Configuration Cross-Attention for Tensor
        Compilers. arXiv preprint, 2024. https://arxiv.org/abs/2405.16623
"""

from __future__ import annotations

import csv
import dataclasses
import io
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator, Sequence

import numpy as np

from graphcost.guards.atomic import atomic_write_text, check_output_file
from graphcost.metrics import COLLECTIONS

if TYPE_CHECKING:
    from graphcost.data.transforms.prepared import PreparedGraph
    from graphcost.inference.cost_model import CostModel

TILE_TOP = 5


@dataclass
class GraphToRank:
    """One graph file prepared for ranking its configurations (`prepare_for_prediction`)."""

    path: Path
    prepared: PreparedGraph  # de-duplicated: one row per distinct configuration; runtimes hidden (ones)
    twin: np.ndarray  # (K_orig,) position, among the kept configurations, of each original one's twin

    @property
    def kind(self) -> str:
        return self.prepared.kind

    def measured_runtime(self) -> np.ndarray | None:
        """(K_orig,) the file's ``config_runtime``; None when it has none or only zero placeholders (an
        unlabelled test file). ValueError naming the file, key and configuration for a negative or
        non-finite runtime (no Kendall tau can be computed against it)."""
        with np.load(self.path, allow_pickle=False) as z:  # schema-checked by prepare_for_prediction
            if "config_runtime" not in z.files:
                return None
            runtime = np.asarray(z["config_runtime"], dtype=np.float64).reshape(-1)
        bad = np.flatnonzero(~np.isfinite(runtime) | (runtime < 0))
        if bad.size:
            raise ValueError(f"{self.path}: key 'config_runtime' holds {runtime[bad[0]]:g} at configuration "
                             f"{int(bad[0])} ({bad.size} such value(s)); measured runtimes must be finite and >= 0")
        return runtime if runtime.shape == self.twin.shape and np.any(runtime != 0) else None


def prepare_for_prediction(path: str | Path, cache_dir: str | Path | None = None) -> GraphToRank:
    """The graph at `path` prepared for ranking: its de-duplicated configurations and, for each
    original configuration, its kept twin.

    The file is prepared once WITHOUT de-duplication (every original configuration, file order),
    then de-duplicated here with data-prep's rule (`graphcost.data.transforms.dedup`: identical rows -> one
    kept); `twin[i]` is the position, among the kept ones, of original config i's twin.

    Ranking never reads runtimes: test-split files hide them (placeholders such as zeros, or no
    `config_runtime` at all), so the file is validated as UNLABELLED (every schema check but the
    runtime ones, `graphcost.data.io.validate`) and the first copy of identical configurations is kept.
    """
    from graphcost.data.transforms.dedup import dedup_min_runtime, row_hashes
    from graphcost.data.transforms.preprocess import prepare_graph

    full = prepare_graph(path, prune=True, dedup=False, cache_dir=cache_dir, labelled=False)  # runtimes: ones
    rows = full.config_codes if full.kind == "layout" else full.config_feat  # (K, C, 3) / (K, 24)
    assert rows is not None  # prepare_graph gives a layout graph codes, a tile graph features
    hashes = row_hashes(rows)  # (K,) uint64
    keep = dedup_min_runtime(hashes, full.runtime, rows)  # (K',) ascending original indices
    kept_hashes = hashes[keep]
    order = np.argsort(kept_hashes, kind="stable")
    pos = np.searchsorted(kept_hashes[order], hashes)
    pos = np.minimum(pos, len(order) - 1)
    twin = order[pos]  # (K,) position among kept
    if not np.array_equal(kept_hashes[twin], hashes):
        raise RuntimeError(f"{path}: internal error mapping configurations to their de-duplicated twins")
    source = np.asarray(full.config_source_index) if len(full.config_source_index) else np.arange(len(hashes))
    dedup = dataclasses.replace(
        full,
        runtime=full.runtime[keep],
        config_codes=full.config_codes[keep] if full.config_codes is not None else None,
        config_feat=full.config_feat[keep] if full.config_feat is not None else None,
        config_source_index=source[keep],
        compiled=full.compiled[keep] if full.compiled is not None else None,
    )
    return GraphToRank(Path(path), dedup, twin)


def rank_original(predictor: CostModel, graph: GraphToRank) -> tuple[np.ndarray, np.ndarray]:
    """(original config indices fastest first, (K_orig,) scores) for one graph.

    `predictor.score` scores the kept configurations; every original configuration takes its
    twin's score; a stable sort keeps duplicates adjacent in file order. A non-finite score
    (e.g. a checkpoint with NaN weights) is a ValueError naming the graph and the model files.
    """
    prepared, twin = graph.prepared, graph.twin
    kept_scores = np.asarray(predictor.score(prepared), dtype=np.float64)  # (K',)
    bad = ~np.isfinite(kept_scores)
    if bad.any():
        models = ", ".join(str(f) for f in getattr(predictor, "files", [])) or "the model"
        first = int(np.argmax(bad))
        source = np.asarray(prepared.config_source_index)
        config = int(source[first]) if len(source) else first  # index in the file
        head = (f"{prepared.source or prepared.name}: {models} gave {int(bad.sum())} non-finite score(s) of "
                f"{bad.size} (first: {kept_scores[first]} for configuration {config})")
        if not _weights_finite(predictor):
            raise ValueError(f"{head}; the checkpoint's weights are not all finite")
        key, value = _largest_feature(prepared)
        raise ValueError(f"{head}; the checkpoint's weights are finite, but the graph's features overflow it: "
                         f"key '{key}' holds {value:.3g}")
    scores = kept_scores[twin]  # (K_orig,)
    return np.argsort(scores, kind="stable"), scores


def _weights_finite(predictor: CostModel) -> bool:
    """Whether every parameter of every model of `predictor` is finite (True when it has none to check)."""
    import torch

    for member in getattr(predictor, "members", []):
        model = member[0] if isinstance(member, tuple) else member
        params = getattr(model, "parameters", None)
        if params is not None and not all(bool(torch.isfinite(p).all()) for p in params()):
            return False
    return True


def _largest_feature(prepared: PreparedGraph) -> tuple[str, float]:
    """(npz key, value) of the float feature of largest magnitude in `prepared` (node or tile config features)."""
    best = ("node_feat", 0.0)
    for key in ("node_feat", "config_feat"):
        arr = getattr(prepared, key, None)
        if arr is None or np.asarray(arr).size == 0:
            continue
        arr = np.asarray(arr, np.float64)
        i = int(np.argmax(np.where(np.isfinite(arr), np.abs(arr), np.inf)))
        if not abs(arr.flat[i]) <= abs(best[1]):
            best = (key, float(arr.flat[i]))
    return best


def submission_id(collection: str, path: str | Path) -> str:
    """Kaggle ID: ``<collection>:<file stem>``, e.g. ``layout:xla:default:resnet50``."""
    if collection not in COLLECTIONS:
        raise ValueError(f"unknown collection {collection!r}; expected one of {', '.join(COLLECTIONS)}")
    return f"{collection}:{Path(path).stem}"


def submission_rows(predictor: CostModel, files: Sequence[str | Path], collection: str,
                    cache_dir: str | Path | None = None, progress: bool = True) -> list[tuple[str, str]]:
    """One (ID, "i;j;k...") row per graph file: layout = all indices, tile = top 5."""
    from tqdm.auto import tqdm

    kind = collection.split(":", 1)[0]
    if predictor.kind != kind:
        raise ValueError(f"a {predictor.kind} model cannot predict the {collection} collection")
    rows = []
    for path in tqdm(list(files), desc=f"predict {collection}", unit="graph", disable=not progress):
        order, _ = rank_original(predictor, prepare_for_prediction(path, cache_dir))
        if kind == "tile":
            order = order[:TILE_TOP]
        rows.append((submission_id(collection, path), ";".join(str(int(i)) for i in order)))
    return rows


def write_csv_rows(rows: Iterable[tuple[str, str]], path: str | Path) -> Path:
    """Atomically write ``ID,TopConfigs`` rows."""
    path = check_output_file(path)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(["ID", "TopConfigs"])
    writer.writerows(rows)
    return atomic_write_text(path, buf.getvalue())


def read_submission(path: str | Path) -> list[tuple[str, str]]:
    """Rows of a submission CSV, checking the header and the ID / TopConfigs format."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such submission file")
    limit = csv.field_size_limit(SUBMISSION_FIELD_MAX)  # a full ranking of 100,000 configurations is ~600 KB
    try:
        with path.open(newline="") as handle:
            return _submission_rows(path, csv.reader(handle))
    except csv.Error as exc:  # a field over the limit, a NUL byte (was: a raw _csv.Error)
        raise ValueError(f"{path}: not a readable submission CSV ({exc})") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: not a text CSV file ({exc.reason} at byte {exc.start})") from None
    finally:
        csv.field_size_limit(limit)


SUBMISSION_FIELD_MAX = 64 * 2**20  # characters in one CSV field of a submission


def _submission_rows(path: Path, reader: Iterator[list[str]]) -> list[tuple[str, str]]:
    header = next(reader, None)
    if header != ["ID", "TopConfigs"]:
        raise ValueError(f"{path}: header must be 'ID,TopConfigs', got {header}")
    rows = []
    for line, row in enumerate(reader, start=2):
        if len(row) != 2 or not row[0] or not all(t.isdigit() for t in row[1].split(";")):
            raise ValueError(f"{path}:{line}: expected '<collection>:<graph>,i;j;k', got {str(row)[:200]}")
        configs = [int(t) for t in row[1].split(";")]
        if len(set(configs)) != len(configs):  # a ranking lists each configuration once
            twice = sorted(c for c, n in Counter(configs).items() if n > 1)
            raise ValueError(f"{path}:{line}: TopConfigs of {row[0]!r} lists configuration(s) "
                             f"{', '.join(map(str, twice[:20]))} more than once")
        rows.append((row[0], row[1]))
    return rows


def combine_submissions(paths: Sequence[str | Path], out: str | Path) -> Path:
    """Merge per-collection CSVs into one; an ID present in two files is an error."""
    seen: dict[str, Path] = {}
    rows = []
    for p in paths:
        for row in read_submission(p):
            if row[0] in seen:
                raise ValueError(f"{p}: ID {row[0]!r} already present in {seen[row[0]]}")
            seen[row[0]] = Path(p)
            rows.append(row)
    return write_csv_rows(rows, out)
