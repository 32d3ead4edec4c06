"""`graphcost data from-proto` on hostile tuning protobufs (issue 19), through the CLI.

Each bad file is generated in tmp_path (`bad_proto_cases`); the command must print one
``error:`` line naming the file and the protobuf field, exit 1 and write nothing for it.
"""

import numpy as np
import pytest
from bad_proto_cases import (
    PER_DIMENSION_FIELDS,
    deep_tuple,
    huge_dims,
    huge_tile_bounds,
    layout_record,
    many_huge_dims,
    module,
    per_dimension_list,
    shape,
    tile_record,
    unknown_opcode,
)  # fmt: skip
from cli_asserts import one_line_error
from typer.testing import CliRunner

from graphcost.cli import app
from graphcost.frontend.hlo.hlo_proto import MAX_SHAPE_DEPTH, MAX_SHAPE_RANK


def _from_proto(tmp_path, data: bytes, *options, name: str = "bad.pb"):
    path = tmp_path / name
    path.write_bytes(data)
    return path, CliRunner().invoke(app, ["data", "from-proto", str(path), "--out", str(tmp_path / "out"), *options])


def _written(tmp_path) -> list:
    return sorted((tmp_path / "out").glob("*.npz")) if (tmp_path / "out").exists() else []


@pytest.mark.parametrize("make", [layout_record, tile_record])
def test_the_generated_records_are_valid(tmp_path, make):
    _, result = _from_proto(tmp_path, make())
    assert result.exit_code == 0, result.output + repr(result.exception)
    assert len(_written(tmp_path)) == 1 and "warning" not in result.output


def test_shallow_tuple_nesting_is_fine(tmp_path):
    _, result = _from_proto(tmp_path, deep_tuple(MAX_SHAPE_DEPTH))
    assert result.exit_code == 0, result.output + repr(result.exception)


@pytest.mark.parametrize("depth", [MAX_SHAPE_DEPTH + 1, 1000, 5000])
def test_deep_tuple_nesting(tmp_path, depth):
    path, result = _from_proto(tmp_path, deep_tuple(depth))
    line = one_line_error(result, str(path), "instructions[0].shape.tuple_shapes",
                           f"nested deeper than {MAX_SHAPE_DEPTH}")
    assert len(line) < 400 and not _written(tmp_path)


def test_dimensions_near_2_62(tmp_path):
    path, result = _from_proto(tmp_path, huge_dims(20))
    one_line_error(result, str(path), "instruction 'p0'", "shape.dimensions", "overflows int64")
    assert not _written(tmp_path)


def test_dimensions_whose_product_fits_int64_convert(tmp_path):
    _, result = _from_proto(tmp_path, huge_dims(1))  # one dimension of 2^62: a valid (if huge) element count
    assert result.exit_code == 0, result.output + repr(result.exception)
    feat = np.load(_written(tmp_path)[0], allow_pickle=False)["node_feat"]
    assert feat[0, 28] == float(1 << 62) and np.isfinite(feat).all()


def test_tile_bounds_near_2_62(tmp_path):
    path, result = _from_proto(tmp_path, huge_tile_bounds(20))
    one_line_error(result, str(path), "runs[1].op_config.tile_size_config.kernel_bounds", "overflows int64")
    assert not _written(tmp_path)


def test_many_repeated_huge_dims_fail_fast(tmp_path):
    """2.4 MB of 2^62 dimensions: the product used to grow a big integer (minutes); now the packed
    field is refused before it is decoded (the time is measured in BENCHMARKS, not here)."""
    path, result = _from_proto(tmp_path, many_huge_dims(2_400_000))
    assert path.stat().st_size > 2_000_000
    one_line_error(result, str(path), "instructions[0].shape field 3", f"more than {MAX_SHAPE_RANK} dimensions")
    assert not _written(tmp_path)


def test_rank_bound_and_product_bound_meet(tmp_path):
    """MAX_SHAPE_RANK dimensions of 1 are fine; one more is refused; MAX_SHAPE_RANK of 2 overflow int64."""
    _, ok = _from_proto(tmp_path, layout_record(module(shape([1] * MAX_SHAPE_RANK, layout=False))), name="ok.pb")
    assert ok.exit_code == 0, ok.output + repr(ok.exception)
    path, result = _from_proto(tmp_path, layout_record(module(shape([1] * (MAX_SHAPE_RANK + 1), layout=False))))
    one_line_error(result, str(path), "instructions[0].shape field 3", f"more than {MAX_SHAPE_RANK} dimensions")
    path, result = _from_proto(tmp_path, layout_record(module(shape([2] * MAX_SHAPE_RANK, layout=False))), name="b2.pb")
    one_line_error(result, str(path), "shape.dimensions", f"{MAX_SHAPE_RANK} values", "overflows int64")


def test_configurable_node_id_past_int64(tmp_path):
    """config_index_to_node is uint64: 2^64 - 1 used to be an OverflowError converting to int64."""
    path, result = _from_proto(tmp_path, layout_record(config_ids=[(1 << 64) - 1]))
    one_line_error(result, str(path), "config_index_to_node", str((1 << 64) - 1), "4 nodes")
    assert not _written(tmp_path)


@pytest.mark.parametrize("field", sorted(PER_DIMENSION_FIELDS))
def test_every_per_dimension_list_is_bounded(tmp_path, field):
    _, ok = _from_proto(tmp_path, per_dimension_list(field, MAX_SHAPE_RANK), name="ok.pb")
    assert ok.exit_code == 0, ok.output + repr(ok.exception)
    path, result = _from_proto(tmp_path, per_dimension_list(field, MAX_SHAPE_RANK + 1))
    one_line_error(result, str(path), "instructions[2]", f"more than {MAX_SHAPE_RANK} {field}")
    assert not (tmp_path / "out" / "bad.npz").exists()


@pytest.mark.parametrize("layout", [True, False])
def test_unknown_opcode_warns_and_strict_refuses(tmp_path, layout):
    path, result = _from_proto(tmp_path, unknown_opcode(layout))
    assert result.exit_code == 0, result.output + repr(result.exception)
    warnings = [line for line in result.output.splitlines() if "unknown opcode" in line]
    assert len(warnings) == 1 and "module 'm'" in warnings[0] and "1 node(s)" in warnings[0] and "'dou'" in warnings[0]
    assert len(_written(tmp_path)) == 1
    for out in _written(tmp_path):
        out.unlink()
    _, strict = _from_proto(tmp_path, unknown_opcode(layout), "--strict")
    one_line_error(strict, str(path), "module 'm'", "unknown opcode names ('dou' x1)", "--strict")
    assert not _written(tmp_path)
