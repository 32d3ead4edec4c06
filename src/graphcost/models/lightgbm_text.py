"""Validation of a LightGBM text model before LightGBM parses it.

LightGBM's text parser trusts its input: a truncated or edited ``trees.txt`` makes it read past
the text (it jumps by the byte counts of its ``tree_sizes=`` header) or index past a tree's arrays,
and the process dies with a segfault, not an exception. `check_model_text` checks what LightGBM
relies on, and raises ValueError naming the file and what is wrong:

* the header: ``tree``, ``version=``, ``num_class=1``, ``max_feature_idx=``, ``tree_sizes=``;
* every tree block at the offset ``tree_sizes`` gives, starting ``Tree=<i>``, then ``end of trees``;
* in every tree, the array lengths that ``num_leaves`` implies, child indices inside the tree, and
  split features inside ``max_feature_idx``; categorical splits (``num_cat`` > 0: graphcost never
  writes them) and linear trees are refused.
"""

from __future__ import annotations

import math

_INTERNAL = ("split_feature", "split_gain", "threshold", "decision_type", "left_child", "right_child")
_LEAF = ("leaf_value",)


def _fields(block: str) -> dict[str, str]:
    """The ``key=value`` lines of a header or tree block."""
    out = {}
    for line in block.splitlines():
        key, eq, value = line.partition("=")
        if eq:
            out[key.strip()] = value.strip()
    return out


def _ints(text: str, what: str) -> list[int]:
    try:
        return [int(v) for v in text.split()]
    except ValueError:
        raise ValueError(f"{what} must be integers") from None


def _finite(values: list[str], what: str) -> None:
    try:
        numbers = [float(v) for v in values]
    except ValueError:
        raise ValueError(f"{what} must be numbers") from None
    if not all(math.isfinite(v) for v in numbers):
        raise ValueError(f"{what} holds a value that is not finite")


def _check_tree(block: str, index: int, max_feature: int) -> None:
    """One ``Tree=i`` block: counts, children and features inside their ranges."""
    fields = _fields(block)
    where = f"Tree={index}"
    leaves = _ints(fields.get("num_leaves", ""), f"{where} num_leaves")
    if len(leaves) != 1 or not 1 <= leaves[0] <= 1 << 24:
        raise ValueError(f"{where}: num_leaves must be one count from 1 to 2^24")
    n = leaves[0]
    if fields.get("num_cat", "0") != "0" or fields.get("is_linear", "0") != "0":
        raise ValueError(f"{where}: categorical splits or linear trees (graphcost writes neither)")
    expected = {key: n - 1 for key in _INTERNAL} if n > 1 else {}
    expected.update({key: n for key in _LEAF})
    for key, count in expected.items():
        if key not in fields:
            raise ValueError(f"{where}: '{key}' is missing")
        values = fields[key].split()
        if len(values) != count:
            raise ValueError(f"{where}: '{key}' holds {len(values)} values, num_leaves={n} needs {count}")
        if key in ("threshold", "leaf_value"):
            _finite(values, f"{where}: '{key}'")
    if n > 1:
        for key in ("left_child", "right_child"):
            for child in _ints(fields[key], f"{where} {key}"):
                if not (0 <= child < n - 1 or 0 <= ~child < n):
                    raise ValueError(f"{where}: '{key}' refers to node {child}, outside a tree of {n} leaves")
        for feature in _ints(fields["split_feature"], f"{where} split_feature"):
            if not 0 <= feature <= max_feature:
                raise ValueError(f"{where}: split_feature {feature} is outside 0..max_feature_idx={max_feature}")
        _ints(fields["decision_type"], f"{where} decision_type")


def check_model_text(text: str, path: object) -> None:
    """ValueError naming `path` unless `text` is a LightGBM text model LightGBM can parse safely."""
    try:
        _check(text)
    except ValueError as exc:
        raise ValueError(f"{path}: not a usable LightGBM model: {exc}") from None


def _check(text: str) -> None:
    data = text.encode("utf-8")
    start = data.find(b"\nTree=0\n")
    if not text.startswith("tree\n") or start < 0:
        raise ValueError("no 'tree' header or no 'Tree=0' block (a truncated or foreign file?)")
    header = _fields(data[:start].decode("utf-8"))
    for key in ("version", "num_class", "max_feature_idx", "tree_sizes"):
        if key not in header:
            raise ValueError(f"header field '{key}' is missing")
    if header["num_class"] != "1":
        raise ValueError(f"num_class={header['num_class']}, graphcost's trees are regressions (1)")
    max_feature = _ints(header["max_feature_idx"], "max_feature_idx")
    if len(max_feature) != 1 or not 0 <= max_feature[0] < 1 << 20:
        raise ValueError("max_feature_idx must be one count")
    sizes = _ints(header["tree_sizes"], "tree_sizes")
    if not sizes or any(size <= 0 for size in sizes):
        raise ValueError("tree_sizes must list one positive size per tree")
    position = start + 1
    for index, size in enumerate(sizes):
        block = data[position:position + size]
        if len(block) != size or not block.startswith(f"Tree={index}\n".encode()):
            raise ValueError(f"Tree={index} is not where tree_sizes puts it (truncated or edited file)")
        _check_tree(block.decode("utf-8", "replace"), index, max_feature[0])
        position += size
    if not data[position:].lstrip(b"\n").startswith(b"end of trees"):
        raise ValueError("no 'end of trees' after the last tree (truncated file)")
