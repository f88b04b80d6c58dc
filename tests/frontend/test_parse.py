"""The text helpers of ``frontend/parse.py``: where a file read as Latin-1 may be taken."""
from __future__ import annotations

import pytest

from hfuse.frontend.parse import first_error, mask, non_ascii_outside_comments, parse


@pytest.mark.parametrize("text, offset", [
    ("int a; // caf\xe9\n", None),
    ("/* Universit\xe4t */ int a;\n", None),
    ('const char* s = "\xb5s";\n', 17),
    ("#pragma message(\"\xe9\")\nint a;\n", 17),
    ("int caf\xe9 = 1;\n", 7),
    ("int a;\n", None),
])
def test_where_a_latin1_character_would_change_the_program(text, offset):
    assert non_ascii_outside_comments(text) == offset


@pytest.mark.parametrize("code", [
    "__device__ float f(Half h) { return __shfl_down_sync(~0u, h.operator __half(), 1); }",  # mmcv's warpReduceSum
    "__device__ float* f(Box* b) { return b->operator float*(); }",
    "__device__ float f(Box b) { return b.operator+(b).x; }",  # (this one the grammar reads as it is)
    "struct Box { __device__ operator __half() const { return h; } __half h; };",  # a declaration: kept
])
def test_conversion_functions_called_by_name_parse(code):
    source = code.encode()
    tree = parse(source)
    assert first_error(tree.root_node) is None
    assert len(mask(source)) == len(source) and (b"operator __half()" in mask(source)) == code.startswith("struct")


@pytest.mark.parametrize("code, kind", [
    ("__global__ void stub(const int4* __restrict__ a, int n){};", "function_definition"),  # Marlin's default kernel
    ("auto g = [](int a){};", "declaration"),  # a lambda's ';' stays
    ("struct S { __device__ S(int a){}; };", "struct_specifier"),
])
def test_an_empty_body_followed_by_a_semicolon_is_a_definition(code, kind):
    root = parse(code.encode()).root_node
    assert first_error(root) is None and root.children[0].type == kind


def test_a_macro_kept_between_string_literals_parses():
    # torch_scatter's host code: CHECK_CUDA(src) expands (PyTorch's TORCH_CHECK) to
    # "..." C10_STRINGIZE(__FILE__) ":" ..., which the grammar does not read; in a host function
    # of 3,000 expanded lines its error swallowed every kernel after it
    code = b'void check(bool ok) { if (!ok) fail("at " C10_STRINGIZE("s.cu") ":" C10_STRINGIZE( 156) " (ok)"); }\n'
    assert first_error(parse(code).root_node) is None
    assert len(mask(code)) == len(code)
    assert mask(b'g(" HELLO ");') == b'g(" HELLO ");'  # (words inside a string are no macro between two)
