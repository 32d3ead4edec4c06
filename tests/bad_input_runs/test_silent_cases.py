"""Smaller silent cases of issue 36: `rank` with a negative or NaN measured runtime (was: a Kendall tau
against -5, or a traceback), and a password in a storage URL's query string (was: printed)."""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from cli_asserts import invoke, one_line_error


@pytest.mark.parametrize("bad", [-5.0, float("nan"), float("inf")])
def test_rank_refuses_a_runtime_it_cannot_rank_against(cost_run, data_root, tmp_path, bad):
    source = sorted(data_root.rglob("valid/*.npz"))[0]
    graph = shutil.copy(source, tmp_path / "g.npz")
    with np.load(graph, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["config_runtime"] = arrays["config_runtime"].astype(np.float64)
    arrays["config_runtime"][3] = bad
    np.savez(graph, **arrays)
    before = graph.read_bytes()
    result = invoke("rank", cost_run, graph, "--tta", "0", "--device", "cpu")
    one_line_error(result, graph, "key 'config_runtime'", "configuration 3", "finite and >= 0")
    assert graph.read_bytes() == before


def test_mask_url_hides_a_password_in_the_query_string():
    from graphcost.tuning.study import mask_url

    assert mask_url("postgresql://me@h/db?password=hunter2&x=1") == "postgresql://me@h/db?password=***&x=1"
    assert mask_url("mysql://h/db?user=me&PASSWORD=s3") == "mysql://h/db?user=me&PASSWORD=***"
    assert mask_url("postgresql://u:p@h/db?sslpassword=zz") == "postgresql://u:***@h/db?sslpassword=***"
    assert mask_url("sqlite:////tmp/a.db?mode=ro") == "sqlite:////tmp/a.db?mode=ro"
    # issue 65: the fragment was printed
    assert mask_url("cannot open postgresql://user@host:1/db#SECRET (x)") == "cannot open postgresql://user@host:1/db#*** (x)"


@pytest.mark.parametrize("url, secret", [
    ("postgresql://h/db?passphrase=open-sesame", "open-sesame"),
    ("mysql://h/db?accessKey=AKIA123", "AKIA123"),
    ("mysql://h/db?api-key=k-123&x=1", "k-123"),
    ("postgresql://h/db?private_key=pk9", "pk9"),
    ("https://ghp_0123456789abcdefghijklmn@git.example.com/db", "ghp_0123456789abcdefghijklmn"),
    ("postgresql://u:two words@h/db", "two words"),
])
def test_mask_url_hides_every_secret_bearing_part(url, secret):
    from graphcost.tuning.study import mask_url

    masked = mask_url(f"cannot open {url} (refused)")
    assert secret not in masked and "***" in masked and masked.endswith(" (refused)")


def test_tune_never_prints_a_query_string_password(tmp_path):
    prog = tmp_path / "p.py"
    prog.write_text("import jax.numpy as jnp\n\ndef make():\n    return (lambda x: x * 2), (jnp.ones(4),)\n")
    result = invoke("tune", f"{prog}:make", "--storage", "postgresql+nosuchdriver://me@127.0.0.1:1/db?password=s3cret",
                    "--out", tmp_path / "o", "--rounds", "1", "--calls", "1", "--processes", "1")  # fmt: skip
    one_line_error(result, "password=***", "cannot open the study storage")
    assert "s3cret" not in result.output
