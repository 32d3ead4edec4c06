"""Prediction: map de-duplicated scores back to the file's configurations; submission CSV rows."""

import numpy as np
import pytest

from graphcost.data.synth.collection import write_synthetic_layout_file
from graphcost.inference.predict import (
    combine_submissions,
    prepare_for_prediction,
    rank_original,
    read_submission,
    submission_id,
    write_csv_rows,
)


class FeatureSumScorer:
    """Deterministic stand-in predictor: score = sum of the configuration's codes."""

    kind, trained_on = "layout", "a test stand-in"

    def score(self, prepared):
        return prepared.config_codes.reshape(prepared.num_configs, -1).sum(1).astype(float) + 0.001 * np.arange(
            prepared.num_configs
        )


@pytest.fixture
def dup_file(tmp_path):
    path = write_synthetic_layout_file(tmp_path / "g.npz", num_nodes=40, num_configs=12, seed=5)
    data = dict(np.load(path, allow_pickle=False))
    feat = data["node_config_feat"]  # (12, C, 18)
    order = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 3, 7, 3])  # configs 12..14 duplicate 3, 7, 3
    data["node_config_feat"] = feat[order]
    data["config_runtime"] = data["config_runtime"][order]
    data["config_runtime"][12] = data["config_runtime"][3] * 0.999  # the twin at 12 is the fastest copy
    out = tmp_path / "dup.npz"
    np.savez(out, **data)
    return out


def test_duplicates_take_their_kept_twins_rank(dup_file):
    graph = prepare_for_prediction(dup_file)
    prepared, twin = graph.prepared, graph.twin
    assert twin.shape == (15,) and prepared.num_configs <= 12
    source = prepared.config_source_index
    assert twin[3] == twin[12] == twin[14] and twin[7] == twin[13]
    assert source[twin[3]] == 3  # ranking reads no runtimes: the first copy is the one kept
    order, scores = rank_original(FeatureSumScorer(), graph)
    assert sorted(order.tolist()) == list(range(15))  # every original index exactly once
    assert scores[3] == scores[12] == scores[14]
    pos = {int(c): i for i, c in enumerate(order)}
    assert abs(pos[3] - pos[12]) <= 2 and abs(pos[3] - pos[14]) <= 2  # duplicates ranked together
    assert np.all(np.diff(scores[order]) >= 0)


def test_unlabelled_test_file_still_ranks(dup_file, tmp_path):
    data = dict(np.load(dup_file, allow_pickle=False))
    data["config_runtime"] = np.zeros_like(data["config_runtime"])  # hidden labels
    path = tmp_path / "test_graph.npz"
    np.savez(path, **data)
    graph = prepare_for_prediction(path)
    order, _ = rank_original(FeatureSumScorer(), graph)
    assert sorted(order.tolist()) == list(range(15))
    assert graph.measured_runtime() is None  # zero placeholders: nothing measured to show beside the scores
    labelled = prepare_for_prediction(dup_file)
    np.testing.assert_array_equal(labelled.measured_runtime(), np.load(dup_file)["config_runtime"])


def test_submission_csv_roundtrip_and_combine(tmp_path):
    assert submission_id("layout:xla:default", "/x/resnet.npz") == "layout:xla:default:resnet"
    with pytest.raises(ValueError, match="unknown collection"):
        submission_id("layout:xla", "a.npz")
    a = write_csv_rows([("tile:xla:k", "4;2;0;1;3")], tmp_path / "a.csv")
    b = write_csv_rows([("layout:nlp:random:g", "1;0;2")], tmp_path / "b.csv")
    combine_submissions([a, b], tmp_path / "all.csv")
    assert read_submission(tmp_path / "all.csv") == [("tile:xla:k", "4;2;0;1;3"), ("layout:nlp:random:g", "1;0;2")]
    (tmp_path / "bad.csv").write_text("ID,Top\nx,1\n")
    with pytest.raises(ValueError, match="header"):
        read_submission(tmp_path / "bad.csv")


def test_combine_refuses_a_repeated_configuration(tmp_path):
    """issue 26: `predict --combine` accepted a TopConfigs that lists one configuration twice."""
    from cli_asserts import invoke, one_line_error

    good = write_csv_rows([("tile:xla:k", "4;2;0;1;3")], tmp_path / "a.csv")
    bad = tmp_path / "b.csv"
    bad.write_text("ID,TopConfigs\nlayout:xla:random:g,1;0;1\n")
    with pytest.raises(ValueError, match="lists configuration"):
        combine_submissions([good, bad], tmp_path / "all.csv")
    one_line_error(invoke("predict", good, bad, "--combine", "--out", tmp_path / "all.csv"), "b.csv:2",
                   "configuration(s) 1 more than once")
    assert not (tmp_path / "all.csv").exists()


def test_a_full_ranking_of_many_configurations_reads(tmp_path):
    """issue 65: a TopConfigs field over csv's 131,072-character default limit was a raw _csv.Error."""
    import csv

    ranking = ";".join(map(str, range(100_000)))  # ~590,000 characters: a full layout ranking
    full = write_csv_rows([("layout:xla:random:g", ranking)], tmp_path / "full.csv")
    limit = csv.field_size_limit()
    assert read_submission(full) == [("layout:xla:random:g", ranking)]
    assert csv.field_size_limit() == limit  # the process-wide limit is restored
    (tmp_path / "binary.csv").write_bytes(b"ID,TopConfigs\n\xff\xfe,1\n")
    with pytest.raises(ValueError, match=r"binary\.csv: not a text CSV file"):
        read_submission(tmp_path / "binary.csv")
