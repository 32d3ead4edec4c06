"""Bad arguments to the Python API's verbs raise a GraphcostError in one line naming the argument (was: plain
TypeError / ValueError / AttributeError from deep inside: `expected str, bytes or os.PathLike object, not
NoneType`, `'str' object has no attribute 'rounds'`, `need at least one array to stack`). Nothing here runs a
program: every case is refused before one would be loaded."""

from pathlib import Path

import pytest

from graphcost.errors import GraphcostError


def _profile(ws, **kw):
    from graphcost.workload.profile import profile_program

    return profile_program(kw.pop("ref", f"{ws}/prog.py:make"), **kw)


def _verify(ws, **kw):
    from graphcost.workload.verify import verify_run

    return verify_run(kw.pop("run", ws), **kw)


def _rank(ws, **kw):
    from graphcost.workload.rank import rank_program

    return rank_program(kw.pop("ref", f"{ws}/prog.py:make"), **{"model": None, **kw})


def _table(ws, **kw):
    from graphcost.kernels.table import KernelTable

    return KernelTable.read(kw.pop("root", ws), **kw)


def _write(ws, **kw):
    from graphcost.kernels.table import write_kernel_dataset

    return write_kernel_dataset(kw.pop("table", ws / "nope"), kw.pop("out", ws / "out"), **kw)


def _kernel_model(ws, **kw):
    from graphcost.kernels.model import KernelCostModel

    return KernelCostModel.load(kw.pop("path", ws))


def _dataset(ws, **kw):
    from graphcost.data.pyg.tpugraphs import TpuGraphsDataset

    return TpuGraphsDataset(kw.pop("raw", ws), kw.pop("cache_dir", ws / "cache"), **kw)


CASES = [
    (_profile, {"ref": None}, "program reference must be a string"),
    (_profile, {"ref": 3}, "program reference must be a string"),
    (_profile, {"processes": 0}, "processes must be an integer from 1"),
    (_profile, {"processes": "2"}, "processes must be an integer"),
    (_profile, {"top": -1}, "top must be an integer"),
    (_profile, {"best": 5}, "best must be a TunedConfig"),
    (_profile, {"best": "missing.json"}, "no such file"),
    (_profile, {"timeout_s": -1}, "timeout_s must be > 0"),
    (_profile, {"protocol": "x"}, "protocol must be a TimingProtocol"),
    (_profile, {"json_out": 3}, "json_out must be a path"),
    (_verify, {"run": None}, "run must be a path"),
    (_verify, {"run": "FILE"}, "no such tuning run directory"),
    (_verify, {"processes": 0}, "processes must be an integer"),
    (_verify, {"tolerance": float("nan")}, "tolerance must be a finite number"),
    (_verify, {"protocol": "x"}, "protocol must be a VerifyProtocol"),
    (_verify, {}, "result.json: missing"),
    (_rank, {"ref": None}, "program reference must be a string"),
    (_rank, {"configs": 0}, "configs must be an integer from 2"),
    (_rank, {"configs": "a"}, "configs must be an integer"),
    (_rank, {"seed": -1}, "seed must be an integer"),
    (_rank, {"model": 3}, "model must be a KernelCostModel"),
    (_rank, {"workers": 0}, "workers must be an integer"),
    (_rank, {"call": "yes"}, "call must be True or False"),
    (_table, {"root": None}, "root must be a path"),
    (_table, {"default_flags": "x"}, "default_flags must be a (24,) vector"),
    (_table, {"root": "MISSING"}, "manifest.json"),
    (_write, {"table": None}, "table must be a path"),
    (_write, {"table": 3}, "table must be a path"),
    (_write, {"out": None}, "out must be a path"),
    (_write, {"overwrite": "yes"}, "overwrite must be True or False"),
    (_write, {}, "manifest.json"),
    (_kernel_model, {"path": 3}, "path must be a path"),
    (_kernel_model, {}, "kernel_model.json: missing"),
    (_kernel_model, {"path": "FILE"}, "kernel_model.json: missing"),
    (_dataset, {"raw": None}, "raw must be a directory of npz files"),
    (_dataset, {"raw": []}, "non-empty list"),
    (_dataset, {"raw": "MISSING"}, "no such directory of npz files"),
    (_dataset, {"raw": ["MISSING.npz"]}, "no such graph file"),
    (_dataset, {"cache_dir": None}, "cache_dir must be a path"),
    (_dataset, {"batch_configs": 0}, "batch_configs must be an integer >= 1"),
    (_dataset, {"seed": -1}, "seed must be an integer"),
    (_dataset, {"scaler": "bogus"}, "scaler must be a FeatureScaler"),
    (_dataset, {"transform": 3}, "transform must be callable"),
]


@pytest.mark.parametrize("verb, kwargs, needle", CASES,
                         ids=[f"{v.__name__[1:]}-{'-'.join(f'{k}={a!r}' for k, a in kw.items()) or 'empty'}"
                              for v, kw, _ in CASES])
def test_a_bad_argument_is_one_graphcost_error(tmp_path, verb, kwargs, needle):
    if verb in (_profile, _rank):
        pytest.importorskip("jax")
    if verb is _dataset:
        pytest.importorskip("torch_geometric")
    (tmp_path / "FILE").write_text("x")
    names = {"FILE": tmp_path / "FILE", "MISSING": tmp_path / "missing", "MISSING.npz": tmp_path / "missing.npz"}
    kwargs = {k: ([names.get(x, x) for x in v] if isinstance(v, list) else names.get(v, v) if isinstance(v, str)
                  else v) for k, v in kwargs.items()}
    with pytest.raises(GraphcostError) as info:
        verb(Path(tmp_path), **kwargs)
    message = str(info.value)
    assert needle in message and "\n" not in message, message
