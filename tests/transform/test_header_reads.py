"""How Clang's findings in kept headers become facts: whole block, refused, or nothing."""
from __future__ import annotations

import pytest

from hfuse.frontend.clang import FunctionMeaning, HeaderUse, Meaning
from hfuse.frontend.extract import load_source
from hfuse.transform.analysis import close_over_calls
from hfuse.transform.header_reads import add_header_reads, classify


def test_reading_threadIdx_or_a_barrier_needs_a_whole_block():
    for reads in (("reads threadIdx",), ("reads %tid", "synchronises the block"), ("reads %warpid",)):
        found = classify(HeaderUse("cub::BlockReduce::Sum", 3, reads))
        assert found.whole_block and "cub::BlockReduce::Sum" in found.why


def test_reading_the_grid_is_refused_by_every_layout():
    for reads in (("reads threadIdx", "reads blockIdx"), ("reads %nctaid",), ("reads blockDim", "reads gridDim"),
                  ("reads %dynamic_smem_size",), ("works on the thread block cluster",)):
        assert classify(HeaderUse("lib::f", 3, reads)).whole_block is False


def test_reading_the_block_size_needs_a_whole_block_of_its_own_size():
    # PyTorch's BlockReduceSum: threadIdx, __syncthreads and blockDim.x / 32 warps
    for reads in (("reads blockDim",), ("reads blockDim", "reads threadIdx", "synchronises the block"),
                  ("reads %ntid",)):
        found = classify(HeaderUse("at::native::cuda_utils::BlockReduceSum", 3, reads))
        assert found.whole_block and found.own_block
    assert not classify(HeaderUse("cub::BlockReduce::Sum", 3, ("reads threadIdx",))).own_block


def test_an_unfinished_walk_is_refused_and_nothing_read_is_nothing():
    assert classify(HeaderUse("lib::f", 3, (), unknown=True)).whole_block is False
    assert classify(HeaderUse("lib::f", 3, ())) is None


def test_cubs_block_collectives_are_whole_block_however_far_clangs_walk_went():
    # reached through a helper template's instance, the walk of CUB's internals may stop at its
    # limit: CUB's block-wide names are known, and not refused for that
    found = classify(HeaderUse("cub::BlockReduce::Sum", 3, (), unknown=True))
    assert found.whole_block and "CUB's block-wide 'cub::BlockReduce'" in found.why
    assert classify(HeaderUse("cub::WarpReduce::Sum", 3, ())) is None
    # a warp-level name is safe by what CUB documents, however far the walk went
    assert classify(HeaderUse("cub::WarpReduce::Sum", 3, (), unknown=True)) is None
    assert classify(HeaderUse("cub::DeviceReduce::Sum", 3, (), unknown=True)).whole_block is False


def test_a_call_through_a_template_parameter_is_refused_with_what_to_give():
    # what runs is the instance's argument's code: no layout is safe, and the hint says how to let hfuse read it
    found = classify(HeaderUse("F", 4, (), unknown=True, through="F"))
    assert not found.whole_block and "template parameter 'F'" in found.why
    assert "template arguments" in found.hint
    other = classify(HeaderUse("lib::make_reducer", 4, (), unknown=True))
    assert not other.whole_block and "-k 'name<...>:256'" in other.hint


def test_cooperative_groups_are_left_to_hfuses_own_rewrite():
    assert classify(HeaderUse("cooperative_groups::__v1::thread_block::sync", 3, ("synchronises the block",))) is None


def test_findings_join_the_facts_of_the_function_they_are_in(tmp_path):
    path = tmp_path / "k.cu"
    path.write_text("__device__ int helper() { return 1; }\n"
                    "__global__ void k(int* o) {\n  o[0] = helper();\n}\n")
    source = load_source(path)
    functions = {f.key: [f] for f in source.functions}
    facts = close_over_calls(functions, set())
    meaning = Meaning((FunctionMeaning(path, "k", 2, 4, (HeaderUse("lib::tid", 3, ("reads threadIdx",)),
                                                           HeaderUse("lib::ctaid", 3, ("reads blockIdx",)))),))
    assert add_header_reads(facts, meaning) == 1  # one finding per line: the stronger one (refused) stands
    k = facts.facts["k"][0]
    assert [line for _, line, _ in k.opaque] == [3] and "lib::ctaid" in k.opaque[0][0] and k.whole_block == []
    assert facts.facts["helper"][0].opaque == []


def test_a_whole_block_finding_is_found_from_the_kernel(tmp_path):
    path = tmp_path / "k.cu"
    path.write_text("__device__ int helper() { return 1; }\n"
                    "__global__ void k(int* o) {\n  o[0] = helper();\n}\n")
    source = load_source(path)
    facts = close_over_calls({f.key: [f] for f in source.functions}, set())
    add_header_reads(facts, Meaning((FunctionMeaning(path, "helper", 1, 1, (HeaderUse("lib::tid", 1, ("reads threadIdx",)),)),)))
    assert facts.whole_block("k")[2] == 1  # reached through the call


UNREAD = """#include <lib/red.cuh>
#include <cuda/std/algorithm>
template <typename T>
__global__ void k(T* out, const T* in) {
  __shared__ T sh[256];
  T v = in[threadIdx.x];
  v = lib::utils::block_sum<T>(v, sh);
  out[threadIdx.x] = cuda::std::max(v, T(0)) + ::fabsf(v);
}
"""


def test_where_clang_could_not_read_the_file_a_call_into_an_unchecked_header_is_refused(tmp_path, monkeypatch):
    # once: the note "hfuse checked the headers it keeps by the names alone" and a fused
    # kernel whose lib::utils::block_sum synchronised the whole fused block
    import hfuse.header_meaning as header_meaning
    from hfuse.api import fuse
    from hfuse.errors import HFuseError
    from hfuse.frontend.options import CompileOptions
    from hfuse.spec import Dim3, KernelSpec

    (tmp_path / "inc" / "lib").mkdir(parents=True)
    (tmp_path / "inc" / "lib" / "red.cuh").write_text(
        "#pragma once\nnamespace lib { namespace utils {\ntemplate <typename T> __device__ T block_sum(T v, T* s) "
        "{ s[threadIdx.x] = v; __syncthreads(); return s[0]; }\n} }\n")
    (tmp_path / "k.cu").write_text(UNREAD)
    (tmp_path / "p.cu").write_text("__global__ void p(float* y) { y[threadIdx.x] = 1.f; }\n")
    monkeypatch.setattr(header_meaning, "read_meaning", lambda *a, **k: Meaning(unavailable="Clang could not read k.cu (why)"))
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")])
    specs = [KernelSpec(tmp_path / "p.cu", "p", Dim3(64)), KernelSpec(tmp_path / "k.cu", "k", Dim3(256), ("float",))]
    with pytest.raises(HFuseError, match=r"'lib::utils::block_sum<T>' is defined by no input, and what it reads of "
                                         r"the block is unchecked: Clang could not read k.cu \(why\)") as err:
        fuse(specs, options=options)
    assert err.value.where.line == 7  # neither cuda::std::max nor ::fabsf (the C++ library's, the toolkit's)


SHAPES_UNREAD = """#include <lib/red.cuh>
#include <lib/glob.cuh>
namespace lib {
__global__ void inside(const float* in, float* out) {       // ordinary lookup from inside lib
  __shared__ float s[128];
  float t = Reducer(s).sum(in[threadIdx.x]);
  out[threadIdx.x] = t;
}
}  // namespace lib
__global__ void declared(const float* in, float* out) {     // a variable of the header's type
  __shared__ float s[128];
  lib::Reducer r{s};
  out[threadIdx.x] = r.sum(in[threadIdx.x]);
}
__global__ void global_helper(const float* in, float* out) { // a global function of a library header
  __shared__ float s[128];
  out[threadIdx.x] = glob_block_sum(s, in[threadIdx.x]);
}
__global__ void nominated(const float* in, float* out) {     // using namespace lib; in the body
  using namespace lib;
  __shared__ float s[128];
  out[threadIdx.x] = Reducer{s}.sum(in[threadIdx.x]);
}
__global__ void shadowed(const float* in, float* out, int glob_block_sum) {  // a parameter of that name
  float Reducer = in[threadIdx.x] * 2.f;
  out[threadIdx.x] = Reducer + glob_block_sum + fminf(Reducer, 1.f) + __shfl_xor_sync(0xffffffffu, Reducer, 1);
}
"""


def _unread_fuse(tmp_path, monkeypatch, kernel):
    import hfuse.header_meaning as header_meaning
    from hfuse.api import fuse
    from hfuse.frontend.options import CompileOptions
    from hfuse.spec import Dim3, KernelSpec

    (tmp_path / "inc" / "lib").mkdir(parents=True, exist_ok=True)
    (tmp_path / "inc" / "lib" / "red.cuh").write_text(
        "#pragma once\nnamespace lib {\nstruct Reducer { float* s; __device__ float sum(float v) "
        "{ s[threadIdx.x] = v; __syncthreads(); return s[0] + s[blockDim.x - 1]; } };\n}\n")
    (tmp_path / "inc" / "lib" / "glob.cuh").write_text(
        "#pragma once\n__device__ inline float glob_block_sum(float* s, float v) "
        "{ s[threadIdx.x] = v; __syncthreads(); return s[0]; }\n")
    (tmp_path / "k.cu").write_text(SHAPES_UNREAD)
    (tmp_path / "p.cu").write_text("__global__ void p(float* y) { y[threadIdx.x] = 1.f; }\n")
    monkeypatch.setattr(header_meaning, "read_meaning", lambda *a, **k: Meaning(unavailable="Clang could not read k.cu (why)"))
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")])
    return fuse([KernelSpec(tmp_path / "p.cu", "p", Dim3(64)), KernelSpec(tmp_path / "k.cu", kernel, Dim3(128))],
                options=options)



@pytest.mark.parametrize("kernel, named, line", [
    ("lib::inside", "'Reducer' may be 'lib::Reducer', which", 6),
    ("declared", "'lib::Reducer'", 12),
    ("global_helper", "'glob_block_sum'", 17),
    ("nominated", "'Reducer' may be 'lib::Reducer', which", 22),
])
def test_where_clang_could_not_read_the_file_any_name_its_headers_declare_is_refused(tmp_path, monkeypatch, kernel,
                                                                                      named, line):
    # once, by the names alone, each of these fused horizontally (only qualified calls were
    # refused), and their header code synchronised the whole fused block
    from hfuse.errors import HFuseError

    with pytest.raises(HFuseError) as err:
        _unread_fuse(tmp_path, monkeypatch, kernel)
    assert f"{named} is declared by a header nobody checked" in str(err.value), str(err.value)
    assert "Clang could not read k.cu (why)" in str(err.value) and err.value.where.line == line


def test_and_names_the_function_declares_itself_are_its_own(tmp_path, monkeypatch):
    # a parameter and a local spelt as the headers' names, and the toolkit's intrinsics
    assert _unread_fuse(tmp_path, monkeypatch, "shadowed").layout.name == "horizontal"


def test_a_kept_header_that_cannot_be_found_leaves_its_files_kernels_unproved(tmp_path):
    # a PyTorch extension file where torch is not installed: nvcc stops at the #include, and
    # nothing says what the kernels reach there (once, they fused by the names alone)
    from hfuse.api import fuse
    from hfuse.errors import HFuseError
    from hfuse.spec import Dim3, KernelSpec

    (tmp_path / "k.cu").write_text("#include <nowhere/extension.h>\n"
                                   "__global__ void k(float* y) { y[threadIdx.x] = exp(y[threadIdx.x]); }\n")
    (tmp_path / "p.cu").write_text("__global__ void p(float* y) { y[threadIdx.x] = 1.f; }\n")
    with pytest.raises(HFuseError, match=r"what 'k' reaches in the headers its file keeps is unchecked: Clang could "
                                         r"not read .*'nowhere/extension.h' file not found") as err:
        fuse([KernelSpec(tmp_path / "p.cu", "p", Dim3(64)), KernelSpec(tmp_path / "k.cu", "k", Dim3(128))])
    assert "the include folders" in err.value.hint


def test_a_file_unread_for_an_ambiguous_half_operator_is_told_pytorchs_extension_flags():
    # torchsort read without the flags its PyTorch build adds: Clang found c10::Half > c10::Half ambiguous
    from hfuse.transform.header_reads import _unread_hint

    why = ("Clang could not read k.cu (k.cu:111: use of overloaded operator '>' is ambiguous (with operand types "
           "'c10::Half' and 'c10::Half'))")
    assert "-D__CUDA_NO_HALF_OPERATORS__" in _unread_hint(why) and "cpp_extension" in _unread_hint(why)
    assert "-D__CUDA_NO_HALF_OPERATORS__" not in _unread_hint("Clang could not read k.cu (k.cu:3: unknown type 'X')")
