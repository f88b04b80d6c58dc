"""How Clang's findings in kept headers become facts: whole block, refused, or nothing."""
from __future__ import annotations

from hfuse.frontend.clang import FunctionMeaning, HeaderUse, Meaning
from hfuse.frontend.extract import load_source
from hfuse.transform.analysis import close_over_calls
from hfuse.transform.header_reads import add_header_reads, classify


def test_reading_threadIdx_or_a_barrier_needs_a_whole_block():
    for reads in (("reads threadIdx",), ("reads %tid", "synchronises the block"), ("reads %warpid",)):
        found = classify(HeaderUse("cub::BlockReduce::Sum", 3, reads))
        assert found.whole_block and "cub::BlockReduce::Sum" in found.why


def test_reading_the_grid_or_the_block_size_is_refused_by_every_layout():
    for reads in (("reads blockDim",), ("reads threadIdx", "reads blockIdx"), ("reads %nctaid",),
                  ("reads %dynamic_smem_size",), ("works on the thread block cluster",)):
        assert classify(HeaderUse("lib::f", 3, reads)).whole_block is False


def test_an_unfinished_walk_is_refused_and_nothing_read_is_nothing():
    assert classify(HeaderUse("lib::f", 3, (), unknown=True)).whole_block is False
    assert classify(HeaderUse("lib::f", 3, ())) is None


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
                                                           HeaderUse("lib::ntid", 3, ("reads blockDim",)))),))
    assert add_header_reads(facts, meaning) == 1  # one finding per line: the stronger one (refused) stands
    k = facts.facts["k"][0]
    assert [line for _, line, _ in k.opaque] == [3] and "lib::ntid" in k.opaque[0][0] and k.whole_block == []
    assert facts.facts["helper"][0].opaque == []


def test_a_whole_block_finding_is_found_from_the_kernel(tmp_path):
    path = tmp_path / "k.cu"
    path.write_text("__device__ int helper() { return 1; }\n"
                    "__global__ void k(int* o) {\n  o[0] = helper();\n}\n")
    source = load_source(path)
    facts = close_over_calls({f.key: [f] for f in source.functions}, set())
    add_header_reads(facts, Meaning((FunctionMeaning(path, "helper", 1, 1, (HeaderUse("lib::tid", 1, ("reads threadIdx",)),)),)))
    assert facts.whole_block("k")[2] == 1  # reached through the call
