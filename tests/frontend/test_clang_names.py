"""frontend/clang_names.py: what the kept headers nobody checked declare, for a file Clang
could not read (``transform/header_reads.add_unchecked_calls`` refuses what names them)."""
from __future__ import annotations

from hfuse.frontend.clang_names import HeaderNames, header_names
from hfuse.frontend.options import CompileOptions

LIBRARY = """#pragma once
namespace lib {
inline namespace v2 {
struct Reducer { float* s; __device__ float sum(float v) { s[threadIdx.x] = v; __syncthreads(); return s[0]; } };
}
enum Mode { kFast, kSafe };
template <int N> __device__ int lane_of() { return threadIdx.x % N; }
namespace detail { __device__ inline int helper() { return 1; } }
}
namespace wrapped { namespace cub { struct BlockThing {}; } }
extern "C" { __device__ inline float glob_block_sum(float v) { return v; } }
using namespace lib::detail;
"""


def test_the_headers_names_are_read_from_their_precompiled_form(tmp_path):
    (tmp_path / "inc" / "lib").mkdir(parents=True)
    (tmp_path / "inc" / "lib" / "red.cuh").write_text(LIBRARY)
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")])
    kept = ("#include <lib/red.cuh>", "#include <cuda/std/cstdint>", "#include <cuda_fp16.h>")
    names = header_names(options, kept, str(tmp_path))
    assert isinstance(names, HeaderNames), names
    # the inline namespace left out, as C++ finds the names; enumerators of a plain enum too
    assert {"lib::Reducer", "lib::lane_of", "lib::Mode", "lib::kFast", "lib::detail::helper",
            "glob_block_sum"} <= names.declared
    # not the toolkit's global names (its intrinsics, half's operators), libcu++'s std, nor a
    # CUB wrapped in a library's namespace (hfuse knows CUB's names itself)
    assert not {n for n in names.declared if n.startswith(("cuda::std::", "wrapped::cub"))}
    assert "__float2half" not in names.declared and "__half" not in names.declared
    assert ("", "lib::detail") in names.nominated


def test_lookup_follows_namespaces_and_using_directives():
    names = HeaderNames(frozenset({"lib::Reducer", "glob_block_sum", "lib::detail::helper"}),
                        frozenset({("", "lib::detail")}))
    assert names.found("Reducer", ("lib", "ops")) == "lib::Reducer"      # from inside lib::ops
    assert names.found("Reducer", ()) is None                            # not from the global namespace
    assert names.found("Reducer", (), ["lib"]) == "lib::Reducer"         # using namespace lib;
    assert names.found("glob_block_sum", ("mine",)) == "glob_block_sum"  # a global name, from anywhere
    assert names.found("helper", ()) == "lib::detail::helper"            # the header's own using-directive
    assert names.qualified("::lib::Reducer::sum") == "lib::Reducer"      # a member of a declared class
    assert names.qualified("mine::Reducer") is None
    # qualified lookup into a namespace follows its using-directives
    nominating = HeaderNames(frozenset({"c10::Half", "at::native::reduce"}),
                             frozenset({("torch", "at"), ("at", "c10")}))
    assert nominating.qualified("torch::Half") == "c10::Half"
    assert nominating.qualified("torch::native::reduce") == "at::native::reduce"
    assert nominating.qualified("torch::Other") is None
