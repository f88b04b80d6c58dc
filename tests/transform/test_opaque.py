"""transform/opaque.py: which names reach code hfuse keeps as an #include and cannot rewrite."""
from __future__ import annotations

from pathlib import Path

import pytest

from hfuse.frontend.extract import model_source
from hfuse.frontend.resolve import LocalNames, Resolver
from hfuse.transform.opaque import classify_cub, cub_entity, opaque_names


@pytest.mark.parametrize("name", ["BlockReduce", "BlockLoad", "BlockRadixSort", "CTA_SYNC", "CTA_SYNC_AND",
                                  "RowMajorTid", "WarpId"])
def test_block_level_cub_needs_a_whole_block(name):
    found = classify_cub(name)
    assert "block-wide" in found.why and found.whole_block


@pytest.mark.parametrize("name", ["AgentReduce", "GridBarrier", "GridEvenShare", "DeviceReduce", "DispatchScan"])
def test_grid_level_cub_is_refused_by_every_layout(name):
    found = classify_cub(name)
    assert "grid-level" in found.why and not found.whole_block


@pytest.mark.parametrize("name", [
    "WarpReduce",   # shuffles among the lanes of one warp: the lane id is the same in a warp-aligned part
    "WarpScan",     # likewise
    "ThreadLoad",   # one thread's own load, with a cache modifier
    "LaneId",       # %laneid: unchanged by fusion
    "Sum", "KeyValuePair", "NumericTraits",  # functors and traits read nothing
    "BLOCK_LOAD_VECTORIZE",                  # an enum constant is a value
])
def test_warp_and_thread_level_cub_is_allowed(name):
    assert classify_cub(name) is None


def test_an_unknown_cub_name_is_refused_rather_than_trusted():
    found = classify_cub("SomethingNew")
    assert "does not know" in found.why and not found.whole_block


def test_cub_entity_skips_inner_namespaces():
    assert cub_entity("cub::BlockReduce::TempStorage") == "BlockReduce"
    assert cub_entity("cub::CUB_300000_SM_900_NS::detail::BlockLoad") == "BlockLoad"
    assert cub_entity("mylib::BlockReduce") is None


def test_cub_wrapped_in_a_librarys_namespace_is_cub():
    # #define CUB_WRAPPED_NAMESPACE mylib: CUB is mylib::cub, and CUB_NS_QUALIFIER names it
    assert cub_entity("mylib::cub::BlockReduce::TempStorage") == "BlockReduce"
    assert cub_entity("CUB_NS_QUALIFIER::BlockScan") == "BlockScan"
    assert cub_entity("mylib::cub") is None and cub_entity("mylib::cubic::BlockReduce") is None


def test_a_comparison_in_template_arguments_hides_no_name():
    # bitsandbytes' kQuantizeBlockwise: once 'cub::BlockStore0)?NUM_PER_TH/2:NUM_PER_TH,cub', unknown, refused
    opaque, resolver = _names("")
    written = "cub::BlockStore<unsigned char, B / N, (DATA_TYPE > 0) ? N / 2 : N, cub::BLOCK_STORE_WARP_TRANSPOSE>"
    found = opaque.reason((), written)
    assert found is not None and "'cub::BlockStore'" in found.why and found.whole_block
    assert opaque.reason((), "cub::WarpReduce<float, (W < 32) ? W : 32>") is None


def _names(text: str):
    source = model_source(Path("lib.cu"), text)
    resolver = Resolver.of(source.items)
    return opaque_names(source.items, resolver), resolver


def test_names_are_followed_through_aliases_typedefs_and_structs():
    opaque, _ = _names("""
namespace mycub = cub;
namespace lib {
typedef mycub::BlockScan<int, 256> Scan;
template <class T> using Sum = cub::BlockReduce<T, 256>;
struct Holder { Scan::TempStorage* storage; };
typedef cub::WarpReduce<float> Warp;
}
using cub::BlockStore;
""")
    assert set(opaque.declarations) == {"lib::Scan", "lib::Sum", "lib::Holder"}  # not the warp-level typedef
    assert "cub::BlockScan" in opaque.declarations["lib::Holder"].why
    scope = ("lib",)
    assert "cub::BlockScan" in opaque.reason(scope, "mycub::BlockScan<int, 256>::TempStorage").why
    assert opaque.reason(scope, "Holder").whole_block
    assert opaque.reason((), "lib::Sum<float>") is not None
    assert "cub::BlockStore" in opaque.reason((), "BlockStore", unqualified=True).why  # the using-declaration
    assert opaque.reason(scope, "Warp") is None
    assert opaque.reason(scope, "mycub::WarpReduce<float>") is None


def test_a_using_directive_makes_unqualified_block_names_cub():
    opaque, _ = _names("namespace mycub = cub;\n")
    local = LocalNames(usings=("mycub",))
    assert opaque.reason((), "BlockReduce", local, unqualified=True) is not None
    assert opaque.reason((), "BlockReduce", LocalNames(), unqualified=True) is None  # no directive: someone else's


def test_an_alias_of_cooperative_groups_thread_block_is_refused():
    opaque, _ = _names("namespace cg = cooperative_groups;\nusing Block = cg::thread_block;\n")
    found = opaque.reason((), "Block", unqualified=True)
    assert "thread_block" in found.why and not found.whole_block  # the rewrite of this_thread_block() would not convert
