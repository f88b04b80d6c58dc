"""frontend/library_text.py: which of the user's macros an installed library's headers mention."""
from __future__ import annotations

from hfuse.frontend.library_text import kernel_definition, library_mentions


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


def test_the_header_defining_a_kernel_is_found_with_the_line_of_its_name(tmp_path):
    lib = tmp_path / "inc" / "mylib"
    lib.mkdir(parents=True)
    (lib / "ops.cuh").write_text('#pragma once\n#include "act.cuh"\n__device__ void helper(float* y);\n')
    (lib / "act.cuh").write_text("#pragma once\n// act_kernel(float*) is declared below\n"
                                 "template <int N>\n__global__ __launch_bounds__(256) void\n"
                                 "    act_kernel(float* y) { helper(y); }\n")
    includes, folders = ["#include <mylib/ops.cuh>"], [tmp_path / "inc"]
    assert kernel_definition("mylib::act_kernel", includes, folders) == ((lib / "act.cuh").resolve(), 5)
    assert kernel_definition("act_kernel<4>", includes, folders) == ((lib / "act.cuh").resolve(), 5)
    # a device function is no kernel; a header not reached is not read
    assert kernel_definition("helper", includes, folders) is None
    assert kernel_definition("act_kernel", ["#include <other.cuh>"], folders) is None
