"""The Ray backend of `graphcost collect` collects the same files as the local one (a local Ray
cluster of two worker processes; the measure resource offered once)."""

import json

import numpy as np
import pytest

pytest.importorskip("jax")
ray = pytest.importorskip("ray")

from graphcost.collect.jobs import CollectOptions, select_programs  # noqa: E402
from graphcost.collect.local import collect  # noqa: E402
from graphcost.measure.cross_process import CrossProcess  # noqa: E402
from graphcost.measure.interleaved import TimingProtocol  # noqa: E402

PROGRAMS = "mlp-d1-w64-b8-fwd,mlp-d1-w64-b8-train"
MEASURED = {"config_runtime", "config_runtime_samples", "config_runtime_normalizers"}


def _options():
    return CollectOptions(configs=3, protocol=TimingProtocol(rounds=1, calls=1, warmup=0),
                          cross=CrossProcess(processes=2, measure_core=-1, max_load=1e9), compile_workers=1)


def test_ray_backend_writes_the_same_files_as_the_local_backend(tmp_path):
    from graphcost.collect.ray_backend import MEASURE_RESOURCE, collect_ray

    specs = select_programs(PROGRAMS, limit=0)
    local = collect(specs, tmp_path / "local", _options(), progress=False)
    distributed = collect_ray(specs, tmp_path / "ray", _options(), progress=False,
                              init_kwargs={"num_cpus": 2, "resources": {MEASURE_RESOURCE: 1},
                                           "include_dashboard": False})
    assert not ray.is_initialized()  # the backend shut down the cluster it started
    assert sorted(local["graphs"]) == sorted(distributed["graphs"]) == sorted(PROGRAMS.split(","))
    for name, entry in local["graphs"].items():
        other = distributed["graphs"][name]
        assert other["file"] == entry["file"] and len(other["processes"]) == 2 and other["node"]
        with np.load(tmp_path / "local" / entry["file"]) as a, np.load(tmp_path / "ray" / other["file"]) as b:
            assert sorted(a.files) == sorted(b.files) and "config_compiled_stats" in a.files  # what the compiler did
            for key in set(a.files) - MEASURED:  # graph, configurations and what the compiler did: identical
                np.testing.assert_array_equal(a[key], b[key], err_msg=f"{name}: {key}")
            assert b["config_runtime_samples"].shape == (3, 2) and (b["config_runtime"] > 0).all()
    manifest = json.loads((tmp_path / "ray" / "manifest.json").read_text())
    assert manifest["environment"]["cross_process"]["backend"] == "ray"
    # a re-run finds every graph finished: it starts no cluster and no task
    again = collect_ray(specs, tmp_path / "ray", _options(), progress=False,
                        init_kwargs={"num_cpus": 2, "resources": {MEASURE_RESOURCE: 1}, "include_dashboard": False})
    assert again["graphs"] == manifest["graphs"]


def test_ray_backend_refuses_a_cluster_without_the_measure_resource(tmp_path):
    from graphcost.collect.ray_backend import collect_ray

    with pytest.raises(ValueError, match="graphcost_measure"):
        collect_ray(select_programs("mlp-d1-w64-b8-fwd", limit=0), tmp_path / "ray", _options(), progress=False,
                    init_kwargs={"num_cpus": 2, "include_dashboard": False})
    assert not ray.is_initialized()


@pytest.mark.parametrize("address", ["127.0.0.1:{port}", "ray://127.0.0.1:{port}", "nonsense"])
def test_an_unreachable_ray_address_is_a_one_line_error(tmp_path, address):
    """issue 26: --ray-address where no cluster listens retried without end."""
    import socket

    from cli_asserts import invoke, one_line_error

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    address = address.format(port=port)
    one_line_error(invoke("collect", "--backend", "ray", "--ray-address", address, "--programs", "mlp-d1-w64-b8-fwd",
                          "--limit", "1", "--out", tmp_path / "col"), "--ray-address", address)
    assert not (tmp_path / "col").exists()
