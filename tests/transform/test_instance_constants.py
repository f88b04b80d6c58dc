"""Which constants of a kernel instance are asked of Clang, and as what expression."""
from __future__ import annotations

from pathlib import Path

from hfuse.frontend.extract import model_source
from hfuse.transform.instance_constants import constant_questions, template_constants

SOURCE = """namespace lib {
template <class C, int kWarps, int kSplit = 2>
__global__ void __launch_bounds__(kWarps * 32) k(float* x) {
  constexpr int kTile = C::kTile / kSplit;
  constexpr int kHalf = kTile / 2;
  auto t = cg::tiled_partition<kHalf>(cg::this_thread_block());
  auto w = cg::tiled_partition<32>(cg::this_thread_block());
  auto u = cg::tiled_partition<C::kWarp>(cg::this_thread_block());
}
}
"""


def _kernel():
    return model_source(Path("k.cu"), SOURCE).kernels["lib::k"]


def test_what_hfuse_evaluates_itself_is_not_asked():
    # the launch bound (kWarps = 4) and the literal 32 are known; the tile sizes need C's members
    asked = constant_questions(_kernel(), ("Cfg", "4"))
    assert [text for text, _ in asked] == ["kHalf", "C::kWarp"]


def test_locals_become_their_initializers_and_parameters_the_arguments():
    asked = dict(constant_questions(_kernel(), ("mylib::Cfg", "4")))
    assert asked["kHalf"].expression == "((mylib::Cfg::kTile / 2) / 2)"  # kSplit's default filled in
    assert asked["C::kWarp"].expression == "mylib::Cfg::kWarp"  # a member's name is left alone
    assert asked["kHalf"].scope == ("lib",) and asked["kHalf"].file == Path("k.cu")


def test_an_instance_fully_known_asks_nothing():
    text = "template <int N> __global__ void __launch_bounds__(N * 2) k(float* x) {\n" \
           "  constexpr int kT = N / 4;\n  auto t = cg::tiled_partition<kT>(cg::this_thread_block());\n}\n"
    kernel = model_source(Path("k.cu"), text).kernels["k"]
    assert constant_questions(kernel, ("64",)) == []
    assert template_constants(kernel, ("64",)) == (("N", 64),)
