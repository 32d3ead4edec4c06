"""`graphcost data from-proto` on damaged copies of the two real tuning protobufs (issue 36: every file
graphcost reads is validated before a C library sees it): generated truncations and byte flips, with a
fixed seed. Each either converts (exit 0: a cut on a field boundary can leave a valid, shorter record)
or ends with exactly one ``error:`` line naming the file, exit 1, no traceback (a TuningData file is
converted kernel by kernel, so the kernels before a damaged one are kept, as on an interrupted run); the
wire walker (`graphcost.frontend.hlo.protowire`) checks the bytes before protobuf parses them."""

from __future__ import annotations

import random

import pytest
from typer.testing import CliRunner

from graphcost.cli import app

CASES = 16  # per file and kind of damage


def _damaged(data: bytes, kind: str, rng: random.Random) -> list[bytes]:
    if kind == "truncated":
        return [data[:cut] for cut in sorted(rng.sample(range(len(data)), CASES))]
    out = []
    for _ in range(CASES):
        b = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        out.append(bytes(b))
    return out


@pytest.mark.parametrize("kind", ["truncated", "flipped"])
@pytest.mark.parametrize("name", ["module_tuning_data_layout.pb", "op_tuning_data.pb"])
def test_damaged_real_protobufs_are_one_line_errors(shared_data, tmp_path, name, kind):
    data = (shared_data / "tpu_graphs_raw" / name).read_bytes()
    for i, damaged in enumerate(_damaged(data, kind, random.Random(f"{name}:{kind}"))):
        path, out = tmp_path / f"{kind}{i}.pb", tmp_path / f"out{i}"
        path.write_bytes(damaged)
        res = CliRunner().invoke(app, ["data", "from-proto", str(path), "--out", str(out)])
        assert res.exit_code in (0, 1) and "Traceback" not in res.output, (i, res.output[-2000:])
        assert res.exception is None or isinstance(res.exception, SystemExit), (i, repr(res.exception))
        if res.exit_code == 1:
            lines = [line for line in res.output.splitlines() if line.startswith("error:")]
            assert len(lines) == 1 and str(path) in lines[0], (i, res.output)
