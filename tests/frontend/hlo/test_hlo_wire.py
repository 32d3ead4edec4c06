"""Wire walker, damage location and HloModuleProto decoding on hand-encoded bytes (a tiny encoder below)."""

import struct

import numpy as np
import pytest
from proto_encode import key, ld, packed, unpacked, varint, vint
from proto_encode import text as s

from graphcost.frontend.hlo.featurizer import HloGraphError, featurize_module
from graphcost.frontend.hlo.hlo_proto import parse_hlo_module
from graphcost.frontend.hlo.protowire import ProtoDecodeError, iter_fields, read_varint
from graphcost.frontend.hlo.tuning_proto import (
    detect_kind,
    parse_module_tuning_data,
    parse_tuning_data,
)


def shape(etype: int, dims, m2m=None, tuple_shapes=()) -> bytes:
    out = vint(2, etype) + packed(3, dims) + b"".join(ld(4, t) for t in tuple_shapes)
    if m2m is not None:
        out += ld(5, packed(1, m2m))
    return out


def instruction(name, opcode, inst_id, shp, operands=(), called=(), extra=b"") -> bytes:
    return (s(1, name) + s(2, opcode) + ld(3, shp) + vint(35, inst_id) + packed(36, operands)
            + packed(38, called) + extra)


def computation(name, comp_id, root_id, insts) -> bytes:
    return s(1, name) + b"".join(ld(2, i) for i in insts) + vint(5, comp_id) + vint(6, root_id)


# --- wire-level ---------------------------------------------------------------------------

def test_varint_roundtrip():
    for v in (0, 1, 127, 128, 300, 2**31, 2**63 - 1, 2**64 - 1):
        assert read_varint(varint(v), 0) == (v, len(varint(v)))
    assert len(varint(-1)) == 10


def _one_instruction_module(shape_bytes: bytes) -> bytes:
    return s(1, "m") + ld(3, computation("c", 0, 1, [instruction("x", "add", 1, shape_bytes)]))


def test_packed_and_unpacked_repeated_give_the_same_values():
    """Protobuf parsers must accept a repeated scalar packed, unpacked, or both; negative int64 too."""
    for dims in (packed(3, [3, 0, 250, -2]), unpacked(3, [3, 0, 250, -2]), packed(3, [3, 0]) + unpacked(3, [250, -2])):
        module = parse_hlo_module(_one_instruction_module(vint(2, 11) + dims))
        assert module.computations[0].instructions[0].shape.dimensions == [3, 0, 250, -2]


def test_fixed_width_fields_are_read():
    data = key(1, 1) + struct.pack("<q", 7) + key(2, 5) + struct.pack("<f", 1.5)
    fields = [(n, w, v) for n, w, v, _ in iter_fields(data, "M")]
    assert fields[0] == (1, 1, 7)
    assert struct.unpack("<f", fields[1][2].to_bytes(4, "little"))[0] == 1.5


@pytest.mark.parametrize(
    "data, problem",
    [
        (b"\x08", "truncated varint"),
        (b"\x08\x80\x80", "truncated varint"),
        (ld(3, b"abcdef")[:-2], "truncated length-delimited"),
        (key(1, 1) + b"\x00\x00", "truncated fixed64"),
        (key(1, 5) + b"\x00", "truncated fixed32"),
        (key(1, 3), "unsupported wire type 3"),
        (b"\x08" + b"\xff" * 11, "longer than 10 bytes"),
        (b"\x00\x01", "field number 0"),
    ],
)
def test_corrupt_bytes_raise_named_errors(data, problem):
    with pytest.raises(ProtoDecodeError, match=problem) as info:
        list(iter_fields(data, "TestMessage"))
    assert "TestMessage" in str(info.value)


def test_truncated_real_files_raise_proto_errors(layout_pb, tile_pb):
    data = layout_pb.read_bytes()
    for cut in (1, 7, 1000, len(data) // 2, len(data) - 3):
        with pytest.raises(ProtoDecodeError) as info:
            record = parse_module_tuning_data(data[:cut])
            record.module  # the module is decoded lazily
        assert "ModuleTuningData" in str(info.value)
    tile = tile_pb.read_bytes()
    with pytest.raises(ProtoDecodeError, match=r"TuningData.*truncated"):
        parse_tuning_data(tile[: len(tile) - 10])


def test_nested_error_names_the_message_path():
    bad_inst = s(1, "x") + vint(35, 1) + ld(3, vint(2, 11) + key(3, 2) + varint(50))  # shape.dimensions cut
    module = s(1, "m") + ld(3, computation("c", 0, 1, [bad_inst]))
    with pytest.raises(ProtoDecodeError, match=r"computations\[0\]\.instructions\[0\]\.shape"):
        parse_hlo_module(module)


def test_damage_is_located_at_its_absolute_byte_offset():
    """protobuf only says 'corrupt'; the walker names the path, the field and the offset in the whole file."""
    cut = key(3, 2) + varint(50)  # shape.dimensions claims 50 bytes; the shape ends right after
    bad = instruction("y", "add", 2, vint(2, 11) + cut)
    data = s(1, "m") + ld(3, computation("c", 0, 1, [instruction("x", "add", 1, shape(11, [2]))]))
    data += ld(3, computation("d", 1, 3, [instruction("z", "add", 3, shape(11, [2])), bad]))
    assert data.count(cut) == 1
    with pytest.raises(ProtoDecodeError, match="truncated length-delimited") as info:
        parse_hlo_module(data)
    assert info.value.message_name == "HloModuleProto.computations[1].instructions[1].shape"
    assert info.value.field == 3 and info.value.offset == data.index(cut)


def test_invalid_utf8_names_the_string_field():
    data = _one_instruction_module(shape(11, [2])).replace(b"add", b"a\xffd")
    with pytest.raises(ProtoDecodeError, match=r"instructions\[0\] field 2 at byte \d+: string is not valid UTF-8"):
        parse_hlo_module(data)


def test_known_field_with_another_wire_type_is_skipped_like_protobuf_does():
    """A varint field sent length-delimited is kept as an unknown field by protobuf, not an error."""
    module = parse_hlo_module(_one_instruction_module(vint(2, 11) + packed(3, [4]) + ld(2, b"xx")))
    assert module.computations[0].instructions[0].shape.element_type == 11


def test_detect_kind_rejects_unrelated_bytes():
    with pytest.raises(ProtoDecodeError, match="neither TuningData nor ModuleTuningData"):
        detect_kind(vint(7, 1))


# --- a synthetic module: every feature block lands in its README column --------------------

def _synthetic_module() -> bytes:
    f32, bf16, tuple_t = 11, 16, 13
    p0 = instruction("p0", "parameter", 10, shape(bf16, [2, 8, 8, 3], [3, 2, 1, 0]), extra=vint(9, 0))
    p1 = instruction("p1", "parameter", 11, shape(bf16, [3, 3, 3, 16], [0, 1, 2, 3]), extra=vint(9, 1))
    window = b"".join(ld(1, vint(1, 3) + vint(2, 2) + vint(3, 1) + vint(4, -1) + vint(5, 1) + vint(6, 1)
                         + vint(7, 1 if i == 0 else 0)) for i in range(2))
    cdn = (vint(7, 0) + vint(8, 3) + packed(11, [1, 2]) + vint(3, 2) + vint(4, 3) + packed(6, [0, 1])
           + vint(9, 0) + vint(10, 3) + packed(12, [1, 2]))
    conv = instruction("conv", "convolution", 12, shape(bf16, [2, 4, 4, 16], [3, 0, 2, 1]), [10, 11],
                       extra=ld(15, window) + ld(16, cdn) + vint(50, 1) + vint(58, 1))
    slc = instruction("slc", "slice", 13, shape(bf16, [1, 4, 4, 16], [3, 2, 1, 0]), [12],
                      extra=ld(17, vint(1, 1) + vint(2, 2) + vint(3, 1)) + ld(17, vint(1, 0) + vint(2, 4) + vint(3, 2))
                      + ld(17, vint(2, 4) + vint(3, 1)) + ld(17, vint(2, 16) + vint(3, 1)))
    pad = instruction("pad", "pad", 14, shape(f32, [3, 6]), [13, 13],
                      extra=ld(21, ld(1, vint(1, 1) + vint(2, 1)) + ld(1, vint(1, -2) + vint(2, 3))))
    tup = instruction("t", "tuple", 15, shape(tuple_t, [], None, [shape(f32, [3, 6])]), [14])
    fused_root = instruction("fr", "add", 20, shape(f32, []), extra=b"")
    fusion = instruction("fu", "fusion", 16, shape(f32, []), [15], called=[7])
    entry = computation("cluster_0", 3, 16, [p0, p1, conv, slc, pad, tup, fusion])
    fused = computation("fused_computation", 7, 20, [fused_root])
    return s(1, "synthetic") + s(2, "cluster_0") + ld(3, fused) + ld(3, entry) + vint(6, 3)


def test_synthetic_module_features_land_in_readme_columns():
    module = parse_hlo_module(_synthetic_module())
    assert module.entry_computation.name == "cluster_0"
    f = featurize_module(module)
    assert f.node_feat.shape == (8, 140) and f.node_feat.dtype == np.float32
    order = [f.node_names.index(n) for n in ("fr", "p0", "p1", "conv", "slc", "pad", "t", "fu")]
    assert order == list(range(8))  # proto order: fused computation first, then the entry
    fr, p0, p1, conv, slc, pad, tup, fu = f.node_feat
    assert fr[0] == 1 and fu[0] == 1 and conv[0] == 0  # is_root of their computations
    assert conv[15] == 1 and conv[2:21].sum() == 1  # bf16 one-hot
    assert tup[18] == 1 and tup[29] == 1  # tuple type, one tuple element
    np.testing.assert_array_equal(conv[21:29], [2, 4, 4, 16, 0, 0, 26, 512])
    assert p1[30] == 1  # parameter_number
    np.testing.assert_array_equal(conv[37:45], [3, 3, 0, 0, 0, 0, 6, 9])  # window size
    np.testing.assert_array_equal(conv[45:53], [2, 2, 0, 0, 0, 0, 4, 4])  # stride
    np.testing.assert_array_equal(conv[53:61], [1, 1, 0, 0, 0, 0, 2, 1])  # padding low
    np.testing.assert_array_equal(conv[61:69], [-1, -1, 0, 0, 0, 0, -2, 1])  # padding high (negative)
    np.testing.assert_array_equal(conv[85:93], [1, 0, 0, 0, 0, 0, 1, 1])  # reversal, true/false counts
    np.testing.assert_array_equal(conv[93:107], [0, 3, 1, 2, 0, 0, 2, 3, 0, 1, 0, 0, 0, 3])
    assert conv[107] == 1 and conv[108] == 1
    np.testing.assert_array_equal(conv[134:140], [3, 0, 2, 1, 0, 0])
    np.testing.assert_array_equal(slc[109:121], [1, 0, 1, 0,  1, 2, 5, 2,  2, 4, 26, 512])
    np.testing.assert_array_equal(pad[125:133], [1, -2, -1, -2, 1, 3, 4, 3])
    # empty lists: product 1 (zero_product_on_empty_source is false for node features)
    assert p0[44] == 1 and p0[28] == 2 * 8 * 8 * 3 and p0[27] == 21
    assert fr[28] == 1 and fr[44] == 1 and fr[112] == 1 and fr[124] == 1
    # edges: distinct operands + the fusion -> fused root edge, sorted
    edges = {tuple(e) for e in f.edge_index.tolist()}
    assert edges == {(3, 1), (3, 2), (4, 3), (5, 4), (6, 5), (7, 6), (7, 0)}
    assert f.edge_index.tolist() == sorted(f.edge_index.tolist())
    np.testing.assert_array_equal(f.node_splits, [0, 8])  # "cluster" ends the only major split
    np.testing.assert_array_equal(f.configurable_nodes, [3])
    g = featurize_module(module, layout_pad=-1)
    np.testing.assert_array_equal(g.node_feat[3, 134:140], [3, 0, 2, 1, -1, -1])
    np.testing.assert_array_equal(g.node_feat[5, 134:140], [-1] * 6)  # pad has no layout


def test_unknown_opcode_maps_to_zero_and_dangling_operand_is_reported():
    ok = s(1, "m") + ld(3, computation("c", 0, 1, [instruction("x", "brand-new-op", 1, shape(11, [2]))]))
    assert featurize_module(parse_hlo_module(ok)).node_opcode.tolist() == [0]
    bad = s(1, "m") + ld(3, computation("c", 0, 1, [instruction("x", "add", 1, shape(11, [2]), [99])]))
    with pytest.raises(HloGraphError, match="operand id 99"):
        featurize_module(parse_hlo_module(bad))
    dup = s(1, "m") + ld(3, computation("c", 0, 1, [instruction("x", "add", 1, shape(11, [2]))] * 2))
    with pytest.raises(HloGraphError, match="not unique"):
        featurize_module(parse_hlo_module(dup))


def test_large_module_copy_leaves_the_garbage_collector_as_it_found_it(monkeypatch):
    """The copy pauses gc for large modules (GC_PAUSE_MIN_INSTRUCTIONS); errors must not leave it off."""
    import gc

    from graphcost.frontend.hlo import hlo_proto

    monkeypatch.setattr(hlo_proto, "GC_PAUSE_MIN_INSTRUCTIONS", 1)
    too_many = _one_instruction_module(vint(2, 11) + packed(3, [1] * (hlo_proto.MAX_SHAPE_RANK + 1)))
    assert gc.isenabled()
    assert parse_hlo_module(_synthetic_module()).num_instructions == 8
    assert gc.isenabled()
    with pytest.raises(ProtoDecodeError, match="more than"):
        parse_hlo_module(too_many)
    assert gc.isenabled()
    gc.disable()
    try:
        parse_hlo_module(_synthetic_module())
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_module_level_fields_are_checked_with_offsets_too():
    """parse_hlo_module splits the top level itself: a bad name and a module without computations."""
    with pytest.raises(ProtoDecodeError, match=r"HloModuleProto field 1 at byte 0: string is not valid UTF-8"):
        parse_hlo_module(ld(1, b"\xff") + ld(3, computation("c", 0, 1, [instruction("x", "add", 1, shape(11, [2]))])))
    with pytest.raises(ProtoDecodeError, match="module has no computations"):
        parse_hlo_module(s(1, "m") + vint(6, 0))


@pytest.mark.parametrize("depth", [70, 1000])
def test_deep_tuple_nesting_in_a_bare_module(depth):
    """70 levels parse (the bound is checked on the copy), 1,000 do not (the walker finds it): same message."""
    from graphcost.frontend.hlo.hlo_proto import MAX_SHAPE_DEPTH

    inner = shape(11, [2])
    for _ in range(depth):
        inner = vint(2, 13) + ld(4, inner)
    with pytest.raises(ProtoDecodeError, match=f"tuple_shapes nested deeper than {MAX_SHAPE_DEPTH} levels") as info:
        parse_hlo_module(_one_instruction_module(inner))
    assert info.value.field == 4
    assert info.value.message_name.startswith("HloModuleProto.computations[0].instructions[0].shape.tuple_shapes")
    assert len(str(info.value)) < 300
