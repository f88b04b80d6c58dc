"""What a call through a pointer may run (``PointerCall``), read from the call's syntax."""
from __future__ import annotations

import pytest

from hfuse.frontend.model import Function, Param
from hfuse.frontend.parse import parse, walk
from hfuse.transform.cuda_syntax import PointerCall


def _call(statement: str) -> PointerCall:
    tree = parse(f"void host() {{ {statement} }}".encode())
    call = next(n for n in walk(tree.root_node)
                if n.type == "call_expression" and n.child_by_field_name("function").text == b"g")
    return PointerCall.of(call, 1)


def _function(head: str, params: tuple[str, ...]) -> Function:
    return Function("f", "device", None, 1, head + " { }", tuple(Param(p, None) for p in params))


@pytest.mark.parametrize("statement, arguments, used", [
    ("g(a, b);", 2, False),
    ("s += g(a);", 1, True),
    ("float v = g();", 0, True),
    ("t[g(a)] = 0;", 1, True),
    ("h(g(a, b, c));", 3, True),
    ("g(args...);", None, False),
    ("return g(a);", 1, False),  # (a void function may return a void call)
])
def test_a_call_says_how_many_arguments_it_passes_and_whether_its_value_is_used(statement, arguments, used):
    call = _call(statement)
    assert (call.arguments, call.value_used) == (arguments, used)


def test_only_functions_of_as_many_parameters_and_a_fitting_result_may_be_the_pointers():
    used, discarded = _call("s += g(a, b);"), _call("g(a, b);")
    two = _function("static __device__ __forceinline__ float f(int a, int b = 0)", ("int a", "int b = 0"))
    assert used.may_run(two) and discarded.may_run(two)
    assert not used.may_run(_function("__device__ float f(int a)", ("int a",)))  # no default fills b in
    void_two = _function("template <int N> static __device__ __forceinline__ void f(int a, int b)", ("int a", "int b"))
    assert discarded.may_run(void_two) and not used.may_run(void_two)
    # what hfuse cannot read as void stays a candidate
    assert used.may_run(_function("__device__ void * f(int a, int b)", ("int a", "int b")))
    assert used.may_run(_function("__device__ RESULT_T f(int a, int b)", ("int a", "int b")))
    # a pack or C's ... takes any number
    assert used.may_run(_function("template <typename... A> __device__ int f(A... a)", ("A... a",)))
    assert used.may_run(_function("__device__ int f(int n, ...)", ("int n",)))
    assert _call("g();").may_run(_function("__device__ void f(void)", ("void",)))
