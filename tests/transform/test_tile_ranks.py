"""A tile's place among the block's tiles (``meta_group_rank()``) asked through a parameter:
kept only where every caller hands in a tile cut from the block."""
from pathlib import Path

import pytest

from hfuse.errors import HFuseError
from hfuse.frontend.extract import model_source
from hfuse.transform.analysis import check_kernel, close_over_calls

WARP_SLOT = "__device__ int slot(const cg::thread_block_tile<32>& w) { return w.meta_group_rank(); }\n"


def _facts(text: str):
    source = model_source(Path("k.cu"), text)
    functions: dict = {}
    for f in source.functions:
        functions.setdefault(f.name, []).append(f)
    return source, close_over_calls(functions, set())


def test_a_helper_asking_a_tiles_place_gets_the_parts_copy():
    # once shared by the parts as written: it returned the fused block's warp number (silently wrong)
    source, facts = _facts(WARP_SLOT + "__global__ void k(int* p) {\n"
                           "  auto warp = cg::tiled_partition<32>(cg::this_thread_block());\n  p[0] = slot(warp);\n}\n")
    check_kernel(source.kernels["k"], facts)
    assert "slot" in facts.needs_context


def test_block_tiles_handed_on_through_parameters_are_proven():
    source, facts = _facts(WARP_SLOT + "__device__ int twice(cg::thread_block_tile<32>& t) { return 2 * slot(t); }\n"
                           "__global__ void k(int* p) {\n  cg::thread_block b = cg::this_thread_block();\n"
                           "  auto warp = cg::tiled_partition<32>(b);\n  p[0] = twice(warp) + slot(cg::tiled_partition<32>(b));\n}\n")
    check_kernel(source.kernels["k"], facts)


@pytest.mark.parametrize("statements, culprit", [
    # a half-warp counts its place within its warp: the part's offset must not be taken from it
    ("auto warp = cg::tiled_partition<32>(cg::this_thread_block());\n  auto half = cg::tiled_partition<16>(warp);\n"
     "  p[0] = slot(half);", 5),
    ("auto warp = cg::tiled_partition<32>(cg::this_thread_block());\n  cg::thread_block_tile<32> copy = warp;\n"
     "  p[0] = slot(copy);", 5),
])
def test_a_tile_parameter_given_anything_but_a_block_tile_is_refused(statements, culprit):
    source, facts = _facts(WARP_SLOT + f"__global__ void k(int* p) {{\n  {statements}\n}}\n")
    with pytest.raises(HFuseError) as err:
        check_kernel(source.kernels["k"], facts)
    assert err.value.where.line == 1 and f"line {culprit}" in str(err.value)
    assert "'w.meta_group_rank()' asks the place of a tile handed in" in str(err.value)



STATS = ("#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n"
         "struct Stats {\n  __device__ int rank(cg::thread_block_tile<32>& w) { return w.meta_group_rank(); }\n};\n"
         "__device__ Stats make_stats() { return Stats(); }\n")


def _fuse(tmp_path, body: str):
    from hfuse.api import fuse
    from hfuse.spec import Dim3, KernelSpec

    path = tmp_path / "stats.cu"
    path.write_text(STATS + "__global__ void k(int* p) {\n  auto warp = cg::tiled_partition<32>(cg::this_thread_block());\n"
                    + body + "\n}\n__global__ void other(float* x) { x[threadIdx.x] *= 2.f; }\n")
    return fuse([KernelSpec(path, "other", Dim3(96)), KernelSpec(path, "k", Dim3(128))])


def test_a_tile_handed_to_a_member_through_an_object_of_unknown_type_is_proven_by_the_calls_of_its_name(tmp_path):
    # DeepSpeed: `auto stats = _local_serial_reduce<...>(buf); stats.template get_params<8, 32>(tb, warp);`
    fused = _fuse(tmp_path, "  auto s = make_stats();\n  p[threadIdx.x] = s.rank(warp);")
    assert "return (w.meta_group_rank() - 96u / w.num_threads());" in fused.source  # from the part's first warp


def test_a_member_call_of_the_name_giving_a_sub_tile_is_refused(tmp_path):
    with pytest.raises(HFuseError, match=r"'w.meta_group_rank\(\)' asks the place of a tile handed in, and a call \(k, line"):
        _fuse(tmp_path, "  auto half = cg::tiled_partition<16>(warp);\n  auto s = make_stats();\n"
                        "  p[threadIdx.x] = s.rank(warp) + s.rank(half);")


@pytest.mark.parametrize("call", ["rank(h)", "this->rank(h)"])
def test_a_member_handing_a_sub_tile_to_another_member_is_refused(tmp_path, call):
    from hfuse.api import fuse
    from hfuse.spec import Dim3, KernelSpec

    path = tmp_path / "members.cu"
    path.write_text(STATS.replace("};\n", "  __device__ int halves(cg::thread_block_tile<32>& w) {\n"
                                  f"    auto h = cg::tiled_partition<16>(w);\n    return {call};\n  }}\n}};\n", 1)
                    + "__global__ void k(int* p) {\n  auto warp = cg::tiled_partition<32>(cg::this_thread_block());\n"
                    "  auto s = make_stats();\n  p[threadIdx.x] = s.rank(warp) + s.halves(warp);\n}\n"
                    "__global__ void other(float* x) { x[threadIdx.x] *= 2.f; }\n")
    with pytest.raises(HFuseError, match=r"a call \(Stats::halves, line 7\) may give it a tile not cut from the thread"):
        fuse([KernelSpec(path, "other", Dim3(96)), KernelSpec(path, "k", Dim3(128))])
