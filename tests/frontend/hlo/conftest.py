"""Fixtures for the HLO frontend tests: the two real TpuGraphs tuning protobufs, decoded once."""

from pathlib import Path

import pytest

from graphcost.frontend.hlo.convert import convert_file
from graphcost.frontend.hlo.featurizer import featurize_module
from graphcost.frontend.hlo.tuning_proto import parse_module_tuning_data, parse_tuning_data


@pytest.fixture(scope="session")
def layout_pb(shared_data) -> Path:
    return shared_data / "tpu_graphs_raw" / "module_tuning_data_layout.pb"


@pytest.fixture(scope="session")
def tile_pb(shared_data) -> Path:
    return shared_data / "tpu_graphs_raw" / "op_tuning_data.pb"


@pytest.fixture(scope="session")
def layout_record(layout_pb):
    return parse_module_tuning_data(layout_pb.read_bytes())


@pytest.fixture(scope="session")
def tile_record(tile_pb):
    return parse_tuning_data(tile_pb.read_bytes())


@pytest.fixture(scope="session")
def layout_feat(layout_record):
    return featurize_module(layout_record.module)


@pytest.fixture(scope="session")
def converted(layout_pb, tile_pb, tmp_path_factory):
    """Both shared files converted once: (layout ProtoConversion, tile ProtoConversion)."""
    out = tmp_path_factory.mktemp("hlo_npz")
    return convert_file(layout_pb, out / "layout"), convert_file(tile_pb, out / "tile")
