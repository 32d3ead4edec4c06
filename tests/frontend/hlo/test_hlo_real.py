"""HLO frontend on the real TpuGraphs tuning protobufs in ../shared/data/tpu_graphs_raw."""

import numpy as np
import pytest
from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.data.graph import LayoutGraph, TileGraph
from graphcost.frontend.hlo.convert import ConversionError, convert_file, tile_config_features
from graphcost.frontend.hlo.featurizer import ELEMENT_TYPE_ORDER, is_topologically_ordered
from graphcost.frontend.hlo.opcodes import OPCODE_IDS


def _load(path):
    with np.load(path, allow_pickle=False) as npz:
        return {k: npz[k] for k in npz.files}


def _check_npz(arrays, kind):
    """Schema checks of our own (data-io's validator runs too, below, when present)."""
    n = arrays["node_feat"].shape[0]
    assert arrays["node_feat"].shape == (n, 140) and arrays["node_feat"].dtype == np.float32
    assert arrays["node_opcode"].shape == (n,) and arrays["node_opcode"].dtype == np.uint8
    e = arrays["edge_index"]
    assert e.ndim == 2 and e.shape[1] == 2 and e.min() >= 0 and e.max() < n
    assert is_topologically_ordered(e)
    c = arrays["config_runtime"].shape[0]
    assert c >= 1 and (arrays["config_runtime"] > 0).all()
    if kind == "layout":
        assert arrays["node_config_feat"].shape == (c, arrays["node_config_ids"].shape[0], 18)
        assert set(np.unique(arrays["node_config_feat"])) <= set(range(-1, 6))
        assert arrays["node_splits"][0] == 0 and arrays["node_splits"][-1] == n
        assert (np.diff(arrays["node_splits"]) > 0).all()
    else:
        assert arrays["config_feat"].shape == (c, 24)
        assert arrays["config_runtime_normalizers"].shape == (c,)


def _validate_with_data_io(path):
    try:
        from graphcost.data.io.tpugraphs_io import load_graph
    except ImportError:  # data-io's loader not present in this checkout: own checks only
        return None
    return load_graph(path, validate=True)


# --- layout -------------------------------------------------------------------------------

def test_layout_record_matches_the_data_readme(layout_record):
    module = layout_record.module
    assert len(module.computations) == 143 and module.num_instructions == 3163
    assert len(layout_record.runs) == 122 and len(layout_record.config_index_to_node) == 62
    assert sum(not r.error for r in layout_record.runs) == 112
    assert sum(r.is_default for r in layout_record.runs) == 1
    assert module.entry_computation.name == module.entry_computation_name


def test_layout_conversion_counts_match_the_proto(converted, layout_record):
    layout, _ = converted
    assert layout.kind == "layout" and len(layout.written) == 1
    arrays = _load(layout.written[0])
    _check_npz(arrays, "layout")
    graph = _validate_with_data_io(layout.written[0])
    if graph is not None:
        assert isinstance(graph, LayoutGraph)
    module = layout_record.module
    insts = [i for c in module.computations for i in c.instructions]
    # counted independently from the decoded proto
    n_edges = sum(len(set(i.operand_ids)) + len(i.called_computation_ids) for i in insts)
    valid = [r for r in layout_record.runs if not r.error and r.profile and r.profile.compute_time_ns > 0]
    assert arrays["node_feat"].shape[0] == len(insts) == 3163
    assert arrays["edge_index"].shape[0] == n_edges
    assert arrays["node_config_ids"].tolist() == layout_record.config_index_to_node.tolist()
    assert arrays["config_runtime"].tolist() == [r.profile.compute_time_ns for r in valid]
    assert len(valid) == 112 and layout.stats.runs_skipped == {"error": 10}
    assert 910e6 < arrays["config_runtime"].min() < arrays["config_runtime"].max() < 927e6
    ops = [insts[i].opcode for i in arrays["node_config_ids"]]
    assert set(ops) <= {"convolution", "dot", "reshape"} and layout.configurable_opcodes_ok
    assert np.array_equal(arrays["node_opcode"], [OPCODE_IDS.get(i.opcode, 0) for i in insts])


def test_layout_config_features_follow_the_runs(converted, layout_record):
    arrays = _load(converted[0].written[0])
    feat = arrays["node_config_feat"]
    valid = [r for r in layout_record.runs if not r.error]
    # distinct layout configs <-> distinct feature tensors (equal configs give equal rows)
    keys = [repr(r.module_config.layout_config.nodes) for r in valid]
    rows = [feat[k].tobytes() for k in range(len(valid))]
    assert len(set(keys)) == len(set(rows)) > 1
    for a in range(0, len(valid), 7):
        for b in range(a + 1, len(valid), 5):
            assert (keys[a] == keys[b]) == (rows[a] == rows[b])
    # element-wise: tensor t, dim d of node i -> column 6 t + d, -1 elsewhere
    run = valid[5]
    for i, tensors in enumerate(run.module_config.layout_config.nodes):
        expect = np.full(18, -1.0)
        for t, dims in enumerate(tensors):
            expect[6 * t:6 * t + len(dims)] = dims
        np.testing.assert_array_equal(feat[5, i], expect)


def test_layout_node_features_agree_with_instructions(layout_feat, layout_record):
    insts = [(c, i) for c in layout_record.module.computations for i in c.instructions]
    f = layout_feat.node_feat
    checked = set()
    for idx, (comp, inst) in enumerate(insts):
        row = f[idx]
        t = inst.shape.element_type
        assert row[2 + ELEMENT_TYPE_ORDER.index(t)] == 1 and row[2:21].sum() == 1
        dims = inst.shape.dimensions
        np.testing.assert_array_equal(row[21:21 + len(dims)], dims)
        assert row[27] == sum(dims) and row[28] == np.float32(np.prod(dims, dtype=np.float64))
        assert row[0] == (inst.id == comp.root_id)
        m2m = inst.shape.layout.minor_to_major if inst.shape.layout else []
        np.testing.assert_array_equal(row[134:134 + len(m2m)], m2m)
        assert (row[134 + len(m2m):140] == 0).all()
        if inst.opcode == "convolution" and "convolution" not in checked:
            checked.add("convolution")
            w = inst.window
            np.testing.assert_array_equal(row[37:37 + len(w)], [d.size for d in w])
            assert row[44] == np.prod([d.size for d in w])
            np.testing.assert_array_equal(row[45:45 + len(w)], [d.stride for d in w])
            np.testing.assert_array_equal(row[53:53 + len(w)], [d.padding_low for d in w])
            cdn = inst.convolution_dimension_numbers
            assert row[93] == cdn.input_batch_dimension and row[94] == cdn.input_feature_dimension
            np.testing.assert_array_equal(row[95:95 + len(cdn.input_spatial_dimensions)], cdn.input_spatial_dimensions)
            assert row[99] == cdn.kernel_input_feature_dimension and row[100] == cdn.kernel_output_feature_dimension
            assert row[105] == cdn.output_batch_dimension and row[106] == cdn.output_feature_dimension
            assert row[107] == inst.feature_group_count >= 1
        elif inst.opcode == "parameter":
            assert row[30] == inst.parameter_number
        elif inst.opcode == "slice" and "slice" not in checked:
            checked.add("slice")
            assert row[109] == inst.slice_dimensions[0].start and row[117] == inst.slice_dimensions[0].limit
        elif inst.opcode == "dynamic-slice" and "dynamic-slice" not in checked:
            checked.add("dynamic-slice")
            np.testing.assert_array_equal(row[121:121 + min(2, len(inst.dynamic_slice_sizes))],
                                          inst.dynamic_slice_sizes[:2])
        elif inst.shape.element_type == 13:
            assert row[29] == len(inst.shape.tuple_shapes) > 0
    assert checked == {"convolution", "slice", "dynamic-slice"}


def test_layout_graph_structure(layout_feat, layout_record):
    assert is_topologically_ordered(layout_feat.edge_index)
    rows = layout_feat.edge_index.tolist()
    assert rows == sorted(rows) and len(rows) == len(set(map(tuple, rows)))  # sorted, no duplicates
    # every fusion/while/... instruction points at the root of each computation it calls
    comps = {c.id: c for c in layout_record.module.computations}
    idx = layout_feat.node_index
    edge_set = set(map(tuple, rows))
    callers = 0
    for comp in layout_record.module.computations:
        for inst in comp.instructions:
            for callee in inst.called_computation_ids:
                assert (idx[inst.id], idx[comps[callee].root_id]) in edge_set
                callers += 1
    assert callers > 0
    # splits: after computations named *cluster*/*while*/*cond*, and the total
    names = [c.name for c in layout_record.module.computations]
    sizes = np.cumsum([len(c.instructions) for c in layout_record.module.computations])
    expect = [0] + [int(sizes[i]) for i, n in enumerate(names) if any(k in n for k in ("cluster", "while", "cond"))]
    expect += [3163] if expect[-1] != 3163 else []
    assert layout_feat.node_splits.tolist() == expect
    np.testing.assert_array_equal(layout_feat.configurable_nodes, sorted(layout_record.config_index_to_node))


# --- tile ---------------------------------------------------------------------------------

def test_tile_conversion_counts_match_the_proto(converted, tile_record):
    _, tile = converted
    assert tile.kind == "tile" and len(tile_record.modules) == 15
    assert len(tile.written) == 15 and not tile.stats.modules_skipped
    by_fp = {f"{r.fingerprint:016x}": r for r in tile_record.modules}
    total_valid = 0
    for path in tile.written:
        arrays = _load(path)
        _check_npz(arrays, "tile")
        graph = _validate_with_data_io(path)
        if graph is not None:
            assert isinstance(graph, TileGraph)
        record = by_fp[path.stem.rsplit("_", 1)[1]]
        insts = [i for c in record.module.computations for i in c.instructions]
        valid = [r for r in record.runs if not r.error and r.profile.compute_time_ns > 1]
        total_valid += len(valid)
        assert arrays["node_feat"].shape[0] == len(insts)
        assert arrays["edge_index"].shape[0] == sum(len(set(i.operand_ids)) + len(i.called_computation_ids) for i in insts)
        assert arrays["config_runtime"].tolist() == [r.profile.compute_time_ns for r in valid]
        default = [r.profile.compute_time_ns for r in valid if r.is_default]
        assert len(default) == 1 and (arrays["config_runtime_normalizers"] == default[0]).all()
        for k, run in enumerate(valid):
            cfg = run.op_config.tile_size_config
            row = arrays["config_feat"][k]
            np.testing.assert_array_equal(row[8:8 + len(cfg.output_bounds)], cfg.output_bounds)
            assert row[15] == (np.prod(cfg.output_bounds) if cfg.output_bounds else 0)
            assert row[6] == sum(cfg.kernel_bounds)
        keys = [repr(r.op_config.tile_size_config) for r in valid]
        rows = [arrays["config_feat"][k].tobytes() for k in range(len(valid))]
        assert len(set(keys)) == len(set(rows))
    assert total_valid == tile.stats.runs_kept == 752 and tile.stats.runs_total == 754
    runtimes = np.concatenate([_load(p)["config_runtime"] for p in tile.written])
    assert runtimes.min() == 598 and runtimes.max() == 3963794


def test_tile_config_features_empty_lists_have_zero_product():
    from graphcost.frontend.hlo.tuning_proto import TileSizeConfig

    row = tile_config_features(TileSizeConfig(kernel_bounds=[], output_bounds=[2, 26, 4, 2], input_bounds=[]))
    np.testing.assert_array_equal(row[:8], 0)
    np.testing.assert_array_equal(row[8:16], [2, 26, 4, 2, 0, 0, 34, 416])
    np.testing.assert_array_equal(row[16:], 0)


# --- files and CLI ------------------------------------------------------------------------

def test_rerun_keeps_existing_outputs_and_overwrite_rewrites(layout_pb, tmp_path):
    first = convert_file(layout_pb, tmp_path)
    again = convert_file(layout_pb, tmp_path)
    assert first.written and again.existing == first.written and not again.written
    assert convert_file(layout_pb, tmp_path, overwrite=True).written == first.written
    assert not [p for p in tmp_path.iterdir() if p.suffix != ".npz"]  # no temp files left


def test_wrong_kind_and_bad_files_give_clear_errors(tile_pb, tmp_path):
    with pytest.raises(ConversionError, match="looks like a TuningData"):
        convert_file(tile_pb, tmp_path, kind="layout")
    cut = tmp_path / "cut.pb"
    cut.write_bytes(tile_pb.read_bytes()[:5000])
    with pytest.raises(ConversionError, match="cut.pb.*truncated"):
        convert_file(cut, tmp_path)
    with pytest.raises(ConversionError, match="cannot read"):
        convert_file(tmp_path / "missing.pb", tmp_path)


def test_cli_from_proto(layout_pb, tile_pb, tmp_path):
    runner = CliRunner()
    result = runner.invoke(app, ["data", "from-proto", str(layout_pb), str(tile_pb), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "runs kept 112/122" in result.output and "runs kept 752/754" in result.output
    assert len(list(tmp_path.glob("*.npz"))) == 16
    bad = runner.invoke(app, ["data", "from-proto", str(tile_pb), "--out", str(tmp_path), "--kind", "layout"])
    assert bad.exit_code == 1 and "looks like a TuningData" in bad.output


def test_out_that_is_a_file_is_a_clear_error(tile_pb, tmp_path):
    """QA: --out naming an existing file was a FileExistsError traceback; the library verb owns the
    check (issue 65) and raises the shared OutputPathError, naming the option it was given."""
    from graphcost.guards.outputs import OutputPathError

    taken = tmp_path / "taken.npz"
    taken.write_bytes(b"x")
    with pytest.raises(OutputPathError, match=r"taken\.npz: out_dir exists and is not a directory"):
        convert_file(tile_pb, taken)
    result = CliRunner().invoke(app, ["data", "from-proto", str(tile_pb), "--out", str(taken)])
    assert result.exit_code == 1 and "not a directory" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_cli_from_proto_warns_when_kinds_share_a_directory(layout_pb, tile_pb, tmp_path):
    """QA: layout + tile outputs in one directory cannot be trained on together; say so."""
    both = CliRunner().invoke(app, ["data", "from-proto", str(layout_pb), str(tile_pb), "--out", str(tmp_path / "a")])
    assert both.exit_code == 0 and "holds both layout and tile graphs" in both.output
    one = CliRunner().invoke(app, ["data", "from-proto", str(tile_pb), "--out", str(tmp_path / "b")])
    assert one.exit_code == 0 and "holds both" not in one.output


def test_layout_dimension_out_of_range_names_the_run():
    """QA: a corrupt minor_to_major value surfaced as a SchemaError about the OUTPUT npz."""
    from graphcost.frontend.hlo.convert import layout_config_features

    np.testing.assert_array_equal(layout_config_features([[[1, 0]]], "x")[0, :3], [1, 0, -1])
    with pytest.raises(ConversionError, match=r"m\.pb: run 7: node 1 tensor 0: layout dimension 55 outside 0\.\.5"):
        layout_config_features([[[0]], [[55, 0]]], "m.pb: run 7")


def test_unfeaturizable_module_error_names_the_file(layout_pb, tmp_path, monkeypatch):
    """QA: an HloGraphError (e.g. a repeated instruction id in a corrupt proto) did not name the .pb file."""
    from graphcost.frontend.hlo import convert as convert_mod
    from graphcost.frontend.hlo.featurizer import HloGraphError

    def broken(module, layout_pad=0.0):
        raise HloGraphError("module 'm': instruction id 0 is not unique")

    monkeypatch.setattr(convert_mod, "featurize_module", broken)
    with pytest.raises(ConversionError, match=rf"{layout_pb.name}: module 'm': instruction id 0"):
        convert_file(layout_pb, tmp_path)


def test_module_bytes_and_tuning_record_decode_to_the_same_dataclasses(layout_record):
    """parse_hlo_module (one computation at a time) and the record's module (parsed whole) agree."""
    import dataclasses

    from graphcost.frontend.hlo.hlo_proto import parse_hlo_module

    streamed = parse_hlo_module(layout_record.module_proto.SerializeToString())
    assert dataclasses.asdict(streamed) == dataclasses.asdict(layout_record.module)
