"""Call cycles in what a kernel reaches, found by strongly connected components."""
from __future__ import annotations

from pathlib import Path

import pytest

from hfuse.errors import HFuseError
from hfuse.frontend.extract import model_source
from hfuse.transform.analysis import check_kernel, close_over_calls
from hfuse.transform.recursion import _components, _cycle_through


def _checked(text: str) -> None:
    source = model_source(Path("k.cu"), text)
    functions: dict = {}
    for f in source.functions:
        functions.setdefault(f.name, []).append(f)
    check_kernel(source.kernels["k"], close_over_calls(functions, set()))


def _ladder(depth: int, last: str) -> str:
    """h0 .. h{depth}: each calls the next two, a call graph of 2**depth paths."""
    lines = [f"__device__ int h{i}(int n);\n" for i in range(depth + 1)]
    lines += [f"__device__ int h{i}(int n) {{ return h{i + 1}(n) + h{min(i + 2, depth)}(n - 1); }}\n"
              for i in range(depth)]
    lines.append(f"__device__ int h{depth}(int n) {{ {last} }}\n__global__ void k(int* p) {{ p[0] = h0(3); }}\n")
    return "".join(lines)


def test_a_call_graph_of_many_paths_is_checked_once_per_function():
    # once walked path by path: 2**60 paths, never finished (a header library's vector casts took 9 s)
    _checked(_ladder(60, "return n;"))


def test_a_cycle_through_what_reads_the_block_at_the_end_of_many_paths_is_found():
    with pytest.raises(HFuseError, match=r"recursion is not supported \(h60 -> h60\)"):
        _checked(_ladder(60, "return n ? h60(n - 1) : threadIdx.x;"))


def test_components_are_the_cycles_and_the_functions_outside_them():
    calls = {"k": ["a", "d"], "a": ["b"], "b": ["c", "a"], "c": [], "d": ["d"]}
    components = {frozenset(c) for c in _components("k", calls)}
    assert components == {frozenset({"k"}), frozenset({"a", "b"}), frozenset({"c"}), frozenset({"d"})}
    assert _cycle_through("a", {"a", "b"}, calls) == ["a", "b", "a"]
    assert _cycle_through("d", {"d"}, calls) == ["d", "d"]
