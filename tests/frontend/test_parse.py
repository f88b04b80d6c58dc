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
