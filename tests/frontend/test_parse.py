"""The text helpers of ``frontend/parse.py``: where a file read as Latin-1 may be taken."""
from __future__ import annotations

import pytest

from hfuse.frontend.parse import non_ascii_outside_comments


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
