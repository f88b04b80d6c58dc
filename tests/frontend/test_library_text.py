"""frontend/library_text.py: which of the user's macros an installed library's headers mention."""
from __future__ import annotations

from hfuse.frontend.library_text import library_mentions


def test_the_headers_an_include_reaches_are_read_for_the_names(tmp_path):
    lib = tmp_path / "inc" / "mylib"
    (lib / "detail").mkdir(parents=True)
    (lib / "ops.cuh").write_text('#pragma once\n#include "detail/impl.cuh"\n#include <cuda_runtime.h>\n')
    (lib / "detail" / "impl.cuh").write_text("#pragma once\n#ifdef MYLIB_DOUBLE_IT\n#define MYLIB_K 2\n#endif\n"
                                             "#include <mylib/more.cuh>\n")
    (lib / "more.cuh").write_text("// MYLIB_FAST is tested by nothing but this comment\n")
    (lib / "unreached.cuh").write_text("#ifdef MY_TILE\n#endif\n")
    found = library_mentions({"MYLIB_DOUBLE_IT", "MYLIB_FAST", "MY_TILE", "BLOCK"}, ["#include <mylib/ops.cuh>"],
                             [tmp_path / "inc"])
    # a quoted include from the including header's folder, an angled one from the library
    # folders, a mention in a comment too (the safe way round); never a header not reached
    assert found == {"MYLIB_DOUBLE_IT", "MYLIB_FAST"}
    assert library_mentions({"MYLIB_DOUBLE_IT"}, ["#include <mylib/ops.cuh>"], []) == frozenset()
