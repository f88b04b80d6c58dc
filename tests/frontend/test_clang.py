"""Clang's reading of what a user's functions reach in the headers hfuse keeps.

Each test reads a real file with libclang in CUDA device mode and asserts what Clang
found: CUB's block collectives behind every alias spelling, libcu++'s PTX wrappers, and
nothing for the warp-level CUB that fuses. It also covers the ways Clang gives no answer
(not installed, a file it cannot read), which leave hfuse to its own analysis."""
from __future__ import annotations

from pathlib import Path

import pytest

from hfuse.frontend import clang as clang_module
from hfuse.frontend import clang_pch, clang_walk
from hfuse.frontend.clang import CHECKED_HEADERS, Meaning, read_meaning, unchecked_headers
from hfuse.frontend.options import CompileOptions

from corpus import cases as C  # tests/corpus/cases.py

pytest.importorskip("clang.cindex", reason="libclang (the libclang-ng wheel) is not installed")
if isinstance(clang_module.clang_arguments(CompileOptions()), str):
    pytest.skip(f"Clang cannot read CUDA here: {clang_module.clang_arguments(CompileOptions())}",
                allow_module_level=True)

TRUST = C.CORPUS / "trust"
CUB_INCLUDES = ["#include <cub/cub.cuh>", "#include <cooperative_groups.h>"]
PTX = ["#include <cuda/ptx>"]


def _reads(meaning: Meaning) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for f in meaning.functions:
        out.setdefault(f.name, set()).update(r for u in f.uses for r in u.reads)
    return out


@pytest.fixture(scope="module")
def cub_meaning(tmp_path_factory) -> Meaning:
    cache = tmp_path_factory.mktemp("cache")
    return read_meaning([TRUST / "cub_aliases.cu"], CompileOptions(), kept_preamble=CUB_INCLUDES, cache=cache)


@pytest.mark.parametrize("kernel", ["dequant_alias", "sum_using_declaration", "sum_typedef", "sum_alias_template",
                                    "sum_macro", "sum_helper_template", "scan_directive"])
def test_cub_block_collectives_read_threadIdx_through_every_spelling(cub_meaning, kernel):
    assert cub_meaning.unavailable is None
    assert "reads threadIdx" in _reads(cub_meaning)[kernel]


def test_a_wrapper_struct_is_found_in_the_member_function_that_calls_cub(cub_meaning):
    # RowReducer::sum calls Impl(*storage).Sum(v); the kernel calls r.sum (hfuse's call graph joins them)
    assert "synchronises the block" in _reads(cub_meaning)["sum"]


def test_warp_level_cub_reads_nothing_of_the_block(cub_meaning):
    assert _reads(cub_meaning)["warp_sums_alias"] == set()
    assert _reads(cub_meaning)["scale_rows"] == set()


def test_names_are_qualified_by_meaning_without_inline_namespaces(cub_meaning):
    found = {u.qualified for f in cub_meaning.functions if f.name == "dequant_alias" for u in f.uses}
    assert {"cub::BlockLoad", "cub::BlockStore"} <= found  # written mycub::BlockLoad; CUB's versioned namespace dropped


def test_function_lookup_is_by_file_name_and_line(cub_meaning):
    first = next(f for f in cub_meaning.functions if f.name == "sum_typedef")
    assert cub_meaning.function(TRUST / "cub_aliases.cu", "sum_typedef", first.first_line) is first
    assert cub_meaning.function(TRUST / "cub_aliases.cu", "sum_typedef", first.last_line + 1) is None
    assert cub_meaning.function(TRUST / "other.cu", "sum_typedef", first.first_line) is None


def test_libcudacxx_ptx_wrappers_are_read_through_their_asm(tmp_path):
    meaning = read_meaning([TRUST / "header_reads.cu"], CompileOptions(), kept_preamble=["#include <cuda/ptx>"],
                           cache=tmp_path)
    reads = _reads(meaning)
    assert reads["tid_ptx"] == {"reads %tid"}
    assert reads["ntid_ptx"] == {"reads %ntid"}
    assert reads["my_thread"] == {"reads %tid"}  # behind a namespace alias, in the user's helper template
    assert reads["lane_ptx"] == set() and reads["scale"] == set()


def test_a_file_not_on_disk_is_read_from_the_given_text(tmp_path):
    path = tmp_path / "virtual.cu"
    text = "#include <cuda/ptx>\n__global__ void k(unsigned* o) { o[0] = cuda::ptx::get_sreg_tid_x(); }\n"
    meaning = read_meaning([path], CompileOptions(), sources={str(path): text}, cache=tmp_path, kept_preamble=PTX)
    assert _reads(meaning)["k"] == {"reads %tid"}


def test_only_the_functions_a_request_reaches_are_read(tmp_path):
    # a file of many kernels (ATen's Normalization.cuh: a dozen) fused for one of them
    path = tmp_path / "many.cu"
    text = ("#include <cuda/ptx>\n"
            "__device__ unsigned lane() { return cuda::ptx::get_sreg_tid_x() & 31; }\n"
            "__global__ void wanted(unsigned* o) { o[0] = lane(); }\n"
            "__global__ void other(unsigned* o) { o[0] = cuda::ptx::get_sreg_tid_x(); }\n")
    key = str(path.resolve())
    meaning = read_meaning([path], CompileOptions(), sources={str(path): text}, cache=tmp_path, kept_preamble=PTX,
                           only=frozenset({(key, 2), (key, 3)}))
    assert _reads(meaning) == {"lane": {"reads %tid"}, "wanted": set()}
    everything = read_meaning([path], CompileOptions(), sources={str(path): text}, cache=tmp_path, kept_preamble=PTX)
    assert _reads(everything)["other"] == {"reads %tid"}


def test_user_macros_and_include_dirs_are_clangs_too(tmp_path):
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "mine.cuh").write_text("__device__ unsigned mine() { return THREAD_OF(); }\n")
    path = tmp_path / "k.cu"
    path.write_text('#include <cuda/ptx>\n#include "mine.cuh"\n__global__ void k(unsigned* o) { o[0] = mine(); }\n')
    options = CompileOptions(include_dirs=(tmp_path / "inc",), defines=("THREAD_OF()=cuda::ptx::get_sreg_tid_x()",))
    meaning = read_meaning([path], options, user_files=[tmp_path / "inc" / "mine.cuh"], cache=tmp_path,
                           kept_preamble=PTX)
    # the user's header is the user's own text: its function is reported, not walked as a kept header
    assert _reads(meaning) == {"mine": {"reads %tid"}, "k": set()}


def test_a_shared_barrier_object_nvcc_only_warns_about_is_read(tmp_path):
    # Clang's CUDA mode calls its dynamic initialisation an error; nvcc warns (#20054), and the
    # CUDA guide writes block barriers so: Clang still reads the declaration whole
    path = tmp_path / "barrier.cu"
    path.write_text("#include <cuda/barrier>\n__global__ void k(float* o) {\n"
                    "  __shared__ cuda::barrier<cuda::thread_scope_block> bar;\n"
                    "  if (threadIdx.x == 0) init(&bar, blockDim.x);\n  __syncthreads();\n  bar.arrive_and_wait();\n}\n")
    meaning = read_meaning([path], CompileOptions(), cache=tmp_path, kept_preamble=["#include <cuda/barrier>"])
    assert meaning.unavailable is None and "k" in {f.name for f in meaning.functions}


def test_a_file_clang_cannot_read_says_where(tmp_path):
    path = tmp_path / "broken.cu"
    path.write_text("#include <cuda/ptx>\n__global__ void k(float* o) {\n  o[0] = undeclared_thing;\n}\n")
    meaning = read_meaning([path], CompileOptions(), cache=tmp_path, kept_preamble=PTX)
    assert meaning.functions == () and f"{path}:3" in meaning.unavailable and "undeclared_thing" in meaning.unavailable


def test_a_file_with_a_kernel_of_thread_block_clusters_is_read(tmp_path):
    # once: <cooperative_groups.h> declares cluster_group for nvcc and NVRTC only, so Clang
    # could not read the file, and every kernel of it that needed an answer was refused
    path = tmp_path / "clusters.cu"
    path.write_text("#include <cooperative_groups.h>\n#include <cuda/atomic>\nnamespace cg = cooperative_groups;\n"
                    "__global__ void __cluster_dims__(2, 1, 1) pairs(float* x) {\n"
                    "  cg::cluster_group c = cg::this_cluster();\n  c.sync();\n  x[c.block_rank()] = 1.f;\n}\n"
                    "__global__ void counted(int* n) {\n"
                    "  cuda::atomic_ref<int, cuda::thread_scope_device>(*n).fetch_add(1);\n}\n")
    kept = ["#include <cooperative_groups.h>", "#include <cuda/atomic>"]
    meaning = read_meaning([path], CompileOptions(), cache=tmp_path, kept_preamble=kept)
    assert meaning.unavailable is None and {"pairs", "counted"} <= {f.name for f in meaning.functions}


def _header_and_user(tmp_path, caster_body: str):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "lenient.cuh").write_text(
        "#pragma once\n"
        "template <class A> struct Caster {\n"
        "  using type = A;\n"
        "  template <int N> __device__ static void cast(A* a) { a[threadIdx.x % N] = A(1); }\n};\n"
        f"template <class A, int N> __device__ void cast_all(A* a) {{ {caster_body} }}\n"
        "__device__ inline float twice(float v) { return 2.f * v; }\n")
    path = tmp_path / "user.cu"
    path.write_text("#include <lenient.cuh>\n"
                    "__global__ void plain(float* x) { x[0] = twice(x[0]); }\n"
                    "__global__ void casting(float* x) { cast_all<float, 4>(x); }\n")
    options = CompileOptions.from_flags(system_include_dirs=[str(lib)])
    meaning = read_meaning([path], options, cache=tmp_path, kept_preamble=["#include <lenient.cuh>"])
    assert meaning.unavailable is None
    return {f.name: {u.qualified: u for u in f.uses} for f in meaning.functions}


def test_an_error_in_a_headers_function_leaves_only_that_function_unknown(tmp_path):
    # Clang reports an error in cast_all (a 'typename' missing): the file was unreadable
    # whole, now only what holds the error is unknown
    uses = _header_and_user(tmp_path, "Caster<A>::type v = A(0); a[0] = v;")
    assert not uses["plain"]["twice"].unknown and not uses["plain"]["twice"].reads
    assert uses["casting"]["cast_all"].unknown


def test_a_headers_member_template_called_without_template_is_read_as_nvcc_reads_it(tmp_path):
    # nvcc compiles 'Caster<A>::cast<N>(a)'; Clang read 'cast < N > (a)' as comparisons, so the
    # call to what reads threadIdx was not in its tree (the function was unknown): the header is
    # read as amended (clang_leniency), without the precompiled headers that hold it as it was
    uses = _header_and_user(tmp_path, "Caster<A>::cast<N>(a);")
    assert not uses["casting"]["cast_all"].unknown and "reads threadIdx" in uses["casting"]["cast_all"].reads


def test_an_error_in_a_users_function_the_request_does_not_reach_leaves_the_file_readable(tmp_path):
    # Clang reports an error in fill (a 'typename' missing). Once, that made the file
    # unreadable for every kernel of it, also one that never calls fill
    path = tmp_path / "user.cu"
    path.write_text("#include <cuda/atomic>\n"
                    "template <class A> struct Holder { using type = float; };\n"
                    "template <class A> __device__ void fill(A* a) { Holder<A>::type v = 1.f; a[0] = v; }\n"
                    "__global__ void counted(int* n) {\n"
                    "  cuda::atomic_ref<int, cuda::thread_scope_device>(*n).fetch_add(1);\n}\n"
                    "__global__ void filling(float* x) { fill<float>(x); }\n")
    key = str(path.resolve())
    kept = ["#include <cuda/atomic>"]
    meaning = read_meaning([path], CompileOptions(), cache=tmp_path, kept_preamble=kept, only=frozenset({(key, 4)}))
    assert meaning.unavailable is None and "counted" in {f.name for f in meaning.functions}
    reaching = read_meaning([path], CompileOptions(), cache=tmp_path, kept_preamble=kept,
                            only=frozenset({(key, 7), (key, 3)}))
    assert reaching.unavailable is not None and f"{path}:3" in reaching.unavailable


def test_what_nvcc_accepts_and_clang_did_not_is_read_for_every_kernel(tmp_path):
    # nvcc compiles 'Caster<A>::cast<N>(a)' (no 'template'); Clang reads it as amended
    # (clang_leniency), where it once made the file unreadable for the kernel that calls it
    path = tmp_path / "user.cu"
    path.write_text("#include <cuda/atomic>\n"
                    "template <class A> struct Caster { template <int N> __device__ static void cast(A* a) {} };\n"
                    "template <class A, int N> __device__ void cast_all(A* a) { Caster<A>::cast<N>(a); }\n"
                    "__global__ void counted(int* n) {\n"
                    "  cuda::atomic_ref<int, cuda::thread_scope_device>(*n).fetch_add(1);\n}\n"
                    "__global__ void casting(float* x) { cast_all<float, 4>(x); }\n")
    key = str(path.resolve())
    reaching = read_meaning([path], CompileOptions(), cache=tmp_path, kept_preamble=["#include <cuda/atomic>"],
                            only=frozenset({(key, 7), (key, 3)}))
    assert reaching.unavailable is None and "cast_all" in {f.name for f in reaching.functions}


def test_no_libclang_is_an_answer_too(monkeypatch, tmp_path):
    monkeypatch.setattr(clang_module, "cindex", lambda: (None, "libclang is not usable here (ImportError: no)"))
    meaning = read_meaning([TRUST / "header_reads.cu"], CompileOptions(), cache=tmp_path, kept_preamble=PTX)
    assert meaning.functions == () and "libclang is not usable" in meaning.unavailable


def test_clang_is_not_asked_where_every_kept_header_is_checked(monkeypatch, tmp_path):
    def no_clang():
        raise AssertionError("Clang was run")

    monkeypatch.setattr(clang_module, "cindex", no_clang)
    kept = ["#include <cuda_fp16.h>", "#include <cooperative_groups.h>", "#include <cooperative_groups/reduce.h>",
            "#include <cstdint>", "#include <unistd.h>"]
    assert unchecked_headers(kept) == ()
    assert read_meaning([TRUST / "pragma_align.cu"], CompileOptions(), kept_preamble=kept, cache=tmp_path) == Meaning()
    assert unchecked_headers(kept + PTX + ['#include "mine.cuh"']) == (*PTX, '#include "mine.cuh"')


def test_the_checked_headers_read_nothing_of_the_block_beyond_what_hfuse_rewrites(tmp_path):
    # every device function the checked toolkit headers define, walked by Clang
    import clang.cindex as ci

    headers = sorted(h for h in CHECKED_HEADERS if h != "cooperative_groups.h")
    path = tmp_path / "all.cu"
    path.write_text("".join(f"#include <{h}>\n" for h in headers))
    arguments = clang_module.clang_arguments(CompileOptions())
    unit = ci.Index.create().parse(str(path), args=arguments)
    assert not [d for d in unit.diagnostics if d.severity >= ci.Diagnostic.Error]
    walker = clang_walk.Walker(ci, frozenset())
    toolkit = str(clang_module.cuda_root())
    reading = {}
    for cursor in unit.cursor.walk_preorder():
        file = cursor.location.file
        if (cursor.kind in walker.functions and cursor.is_definition() and file is not None
                and file.name.startswith(toolkit) and Path(file.name).name in CHECKED_HEADERS | {"cuda_fp16.hpp",
                                                                                              "cuda_bf16.hpp"}):
            reads, cut = walker.reads(cursor)
            if reads or cut:
                reading[f"{Path(file.name).name}:{cursor.spelling}"] = reads
    assert reading == {}


def test_the_precompiled_headers_are_built_once_and_reused(tmp_path):
    for _ in range(2):
        meaning = read_meaning([TRUST / "header_reads.cu"], CompileOptions(), kept_preamble=["#include <cuda/ptx>"],
                               cache=tmp_path)
        assert meaning.unavailable is None
    built = sorted(p.suffix for p in (tmp_path / "clang").iterdir())
    # one preamble, the header it was built from and what that read, no leftovers
    assert built == [".cuh", ".inputs", ".pch"]


def test_a_precompiled_header_is_built_again_when_a_header_it_read_changes(tmp_path):
    # an installed library upgraded, or a header of one being written: Clang refuses a PCH
    # older than its inputs, and hfuse once answered "could not read" until the cache was emptied
    import os

    (tmp_path / "inc" / "lib").mkdir(parents=True)
    header = tmp_path / "inc" / "lib" / "lane.cuh"
    header.write_text("#pragma once\nnamespace lib { __device__ inline int lane() { return 0; } }\n")
    source = tmp_path / "k.cu"
    source.write_text("#include <lib/lane.cuh>\n__global__ void k(int* o) { o[0] = lib::lane(); }\n")
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")])

    def reads() -> tuple[str, ...]:
        clang_module._read_once.cache_clear()  # (one process answers one request once)
        meaning = read_meaning([source], options, kept_preamble=["#include <lib/lane.cuh>"], cache=tmp_path)
        assert meaning.unavailable is None, meaning.unavailable
        return next(u.reads for u in meaning.function(source, "k", 2).uses if u.qualified == "lib::lane")

    assert reads() == ()
    header.write_text("#pragma once\nnamespace lib { __device__ inline int lane() { return threadIdx.x; } }\n")
    os.utime(header, ns=(os.stat(header).st_atime_ns, os.stat(header).st_mtime_ns + 10**9))
    assert reads() == ("reads threadIdx",)
    assert len(list((tmp_path / "clang").glob("*.pch"))) == 1  # the same PCH, built again


def test_files_keeping_one_umbrella_header_share_its_precompiled_form(tmp_path):
    # each PyTorch extension file keeps torch/extension.h and a different few of ATen's and c10's
    # headers: one PCH a set made every file of a library wait 20 s on its first request
    (tmp_path / "inc" / "torch").mkdir(parents=True)
    (tmp_path / "inc" / "lib").mkdir()
    (tmp_path / "inc" / "torch" / "extension.h").write_text(
        "#pragma once\nnamespace torch { __device__ inline int lane() { return threadIdx.x & 31; } }\n")
    (tmp_path / "inc" / "lib" / "sync.cuh").write_text(
        "#pragma once\nnamespace lib { __device__ inline void wait() { __syncthreads(); } }\n")
    (tmp_path / "inc" / "lib" / "pure.cuh").write_text(
        "#pragma once\nnamespace lib { __device__ inline int twice(int v) { return 2 * v; } }\n")
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")])
    reads = {}
    for header, call in (("sync.cuh", "lib::wait()"), ("pure.cuh", "o[1] = lib::twice(o[0])")):
        source = tmp_path / f"k_{header}.cu"
        kept = [f"#include <lib/{header}>", "#include <torch/extension.h>"]
        source.write_text("".join(f"{line}\n" for line in kept) +
                          f"__global__ void k(int* o) {{ o[0] = torch::lane(); {call}; }}\n")
        meaning = read_meaning([source], options, kept_preamble=kept, cache=tmp_path)
        assert meaning.unavailable is None, meaning.unavailable
        reads[header] = {u.qualified: u.reads for u in meaning.function(source, "k", len(kept) + 1).uses}
    # one PCH (of the umbrella alone), and each file's other kept header still read on top of it
    assert len(list((tmp_path / "clang").glob("*.pch"))) == 1
    assert clang_pch.precompiled_lines(["#include <lib/sync.cuh>", "#include <torch/extension.h>"]) == \
        "#include <torch/extension.h>\n"
    assert reads["sync.cuh"]["lib::wait"] == ("synchronises the block",)
    assert reads["pure.cuh"]["lib::twice"] == ()
    assert reads["pure.cuh"]["torch::lane"] == ("reads threadIdx",)


def test_the_precompiled_header_reads_the_kept_headers_with_the_users_macros():
    preamble = ["#define CUB_WRAPPED_NAMESPACE mylib", "#include <cub/cub.cuh>", "#undef CUB_WRAPPED_NAMESPACE",
                "#define MY_GUARDLESS 1", "#include <cuda/ptx>"]
    # each header after the macros it was included with, and every macro undefined at the end,
    # where the file's own text defines it (an include guard left defined would hide the file)
    assert clang_pch.precompiled_lines(preamble) == "".join(f"{line}\n" for line in [
        *preamble, "#undef CUB_WRAPPED_NAMESPACE", "#undef MY_GUARDLESS"])
    # with a shared umbrella: the macros before it, and it alone
    umbrella = ["#define TORCH_CONFIG 1", "#include <lib/a.cuh>", "#include <torch/extension.h>", "#define LATER 1",
                "#include <lib/b.cuh>"]
    assert clang_pch.precompiled_lines(umbrella) == \
        "#define TORCH_CONFIG 1\n#include <torch/extension.h>\n#undef TORCH_CONFIG\n"
    assert clang_pch.precompiled_lines(["#define ONLY 1"]) == ""


def test_a_namespace_a_kept_header_reopens_is_no_use_of_that_header(tmp_path):
    # once (ColossalAI with PyTorch's headers): 'std::abs' in a user's functor named namespace std
    # as c10/cuda/CUDAStream.h reopens it, so that header counted as one whose declarations device
    # code uses, and was kept for NVRTC (which cannot read it): the kernel went to nvcc
    (tmp_path / "inc" / "lib").mkdir(parents=True)
    (tmp_path / "inc" / "lib" / "reopen.h").write_text("#pragma once\nnamespace std { struct reopened_marker {}; }\n")
    source = tmp_path / "k.cu"
    source.write_text("#include <lib/reopen.h>\n__global__ void k(float* o) { o[0] = std::fabs(o[1]); }\n")
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")])
    meaning = read_meaning([source], options, kept_preamble=["#include <lib/reopen.h>"], cache=tmp_path)
    assert meaning.unavailable is None, meaning.unavailable
    assert not any(f.endswith("reopen.h") for f in meaning.header_files), meaning.header_files


def test_the_least_recently_used_precompiled_headers_go_past_the_budget(tmp_path):
    # every set of options makes a PCH of its own (50 MB with CUDA's headers, 200 MB with
    # PyTorch's): a test suite's runs had left 555 of them, 12 GB, in the user's cache
    import os
    import time

    now = time.time()
    ages = {"old": 3600 * 5, "older": 3600 * 9, "kept": 3600 * 20, "recent": 60, "new": 0}
    for name, age in ages.items():
        for suffix in (".pch", ".cuh"):
            (tmp_path / f"{name}{suffix}").write_bytes(b"x" * (100 if suffix == ".pch" else 1))
            os.utime(tmp_path / f"{name}{suffix}", (now - age, now - age))
    removed = clang_pch.prune_precompiled(tmp_path, keep=tmp_path / "kept.pch", budget=250)
    # the oldest first, never the one just built nor one a request may be loading now
    assert [p.name for p in removed] == ["older.pch", "old.pch"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.cuh", "kept.pch", "new.cuh", "new.pch",
                                                          "recent.cuh", "recent.pch"]
    assert clang_pch.prune_precompiled(tmp_path, keep=tmp_path / "kept.pch", budget=250) == []
    # built by another request, it is only the oldest
    assert clang_pch.prune_precompiled(tmp_path, budget=250) == [tmp_path / "kept.pch"]


def _read_in_a_process(cache: str) -> str | None:
    meaning = read_meaning([TRUST / "header_reads.cu"], CompileOptions(), kept_preamble=PTX, cache=Path(cache))
    return meaning.unavailable or ",".join(sorted(r for f in meaning.functions for u in f.uses for r in u.reads))


def test_processes_building_one_precompiled_header_at_once_all_read_it(tmp_path):
    # tuning many requests at once: every process may find the PCH missing and build it;
    # each writes its own temporary file and renames it over the target, so none reads half a file
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(3) as pool:
        answers = pool.map(_read_in_a_process, [str(tmp_path)] * 3)
    assert len(set(answers)) == 1 and "reads %tid" in answers[0]
    assert sorted(p.suffix for p in (tmp_path / "clang").iterdir()) == [".cuh", ".inputs", ".pch"]


def test_a_kept_headers_setmaxnreg_is_read(tmp_path):
    # CUTLASS's warpgroup_reg_alloc<N>() is such a wrapper: fused, it may hang (frontend/model.py)
    (tmp_path / "sys").mkdir()
    (tmp_path / "sys" / "regs.h").write_text(
        "#pragma once\ntemplate <int N> __device__ __forceinline__ void reg_alloc() {\n"
        '  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\\n" :: "n"(N));\n}\n')
    path = tmp_path / "k.cu"
    path.write_text("#include <regs.h>\n__global__ void k(float* o) { reg_alloc<240>(); o[0] = 1.f; }\n")
    options = CompileOptions(system_include_dirs=(tmp_path / "sys",))
    meaning = read_meaning([path], options, cache=tmp_path, kept_preamble=["#include <regs.h>"])
    assert _reads(meaning) == {"k": {"sets its warpgroup's registers (setmaxnreg)"}}


def test_a_kept_headers_wgmma_is_read(tmp_path):
    (tmp_path / "sys").mkdir()
    (tmp_path / "sys" / "gmma.h").write_text(
        '#pragma once\n__device__ __forceinline__ void fence() { asm volatile("wgmma.fence.sync.aligned;\\n"); }\n')
    path = tmp_path / "k.cu"
    path.write_text("#include <gmma.h>\n__global__ void k(float* o) { fence(); o[0] = 1.f; }\n")
    meaning = read_meaning([path], CompileOptions(system_include_dirs=(tmp_path / "sys",)), cache=tmp_path,
                           kept_preamble=["#include <gmma.h>"])
    assert _reads(meaning) == {"k": {"runs on warpgroups (wgmma)"}}


@pytest.mark.parametrize("message, std, wanted", [
    ("C++20 or later compatible compiler is required to use PyTorch.", "c++17", "c++20"),
    ("This library requires C++17", "c++14", "c++17"),
    ("requires at least C++ 17", "c++11", "c++17"),
    ("C++20 or later compatible compiler is required to use PyTorch.", "c++20", None),  # not later
    ("unknown type name 'C++20'", "c++17", None),  # no demand
    ("expected ';' after expression", "c++17", None),
])
def test_a_header_asking_for_a_later_standard_is_told_apart(message, std, wanted):
    assert clang_module.required_dialect(message, std) == wanted


BLOCK_SUM_HEADER = """#pragma once
namespace lib { namespace utils {
template <typename T>
__device__ T block_sum(T v, T* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  T s = 0;
  for (int i = 0; i < 32; ++i) s += shared[i];
  return s;
}
} }
"""


@pytest.mark.parametrize("before, call", [
    ("", "lib::utils::block_sum<T>(v, sh)"),
    ("", "lib::utils::block_sum(v, sh)"),
    ("using lib::utils::block_sum;", "block_sum<T>(v, sh)"),
    ("using lib::utils::block_sum;", "block_sum(v, sh)"),
    ("using namespace lib::utils;", "block_sum(v, sh)"),
    ("namespace u = lib::utils;", "u::block_sum<T>(v, sh)"),
])
def test_a_kernel_templates_dependent_call_into_a_header_is_read(tmp_path, before, call):
    # once: in a kernel template, a call whose arguments depend on T is an unresolved name in
    # Clang's tree (OVERLOADED_DECL_REF, its "referenced" itself): hfuse saw no call at all, and
    # fused PyTorch's at::native::cuda_utils::BlockReduceSum<acc_t> horizontally, where its
    # __syncthreads and threadIdx were the fused block's
    (tmp_path / "inc" / "lib").mkdir(parents=True)
    (tmp_path / "inc" / "lib" / "red.cuh").write_text(BLOCK_SUM_HEADER)
    source = tmp_path / "k.cu"
    source.write_text(f"#include <lib/red.cuh>\n{before}\ntemplate <typename T>\n__global__ void k(T* out, const T* in) "
                      "{\n  __shared__ T sh[32];\n  T v = in[threadIdx.x];\n"
                      f"  v = {call};\n  out[threadIdx.x] = v;\n}}\n")
    meaning = read_meaning([source], CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")]),
                           kept_preamble=["#include <lib/red.cuh>"], cache=tmp_path)
    assert meaning.unavailable is None
    uses = {(u.qualified, u.line): set(u.reads) for f in meaning.functions for u in f.uses}
    assert uses[("lib::utils::block_sum", 7)] >= {"reads threadIdx", "synchronises the block"}


POLICY_HEADER = """#pragma once
namespace lib2 {
struct Block1D {
  static __device__ int Tid() { return threadIdx.x; }
  static __device__ int Warps() { return blockDim.x / 32; }
};
template <typename T, typename B = Block1D>
__device__ T block_sum(T v, T* shared) {
  const int tid = B::Tid();
  if (tid % 32 == 0) shared[tid / 32] = v;
  T s = 0;
  for (int i = 0; i < B::Warps(); ++i) s += shared[i];
  return s;
}
template <typename T, class Op>
__device__ T combine(T a, T b, const Op& op) { return op(a, b); }
}
"""


@pytest.mark.parametrize("template", [False, True])
def test_a_call_through_a_headers_template_parameter_is_never_taken_for_nothing(tmp_path, template):
    # PyTorch's BlockReduceSum<T, B = Block1D> reads threadIdx and blockDim through B::Tid()
    # and B::Warps(). Called from a kernel template, Clang has only the header's template to
    # walk, where B::Tid() names nothing yet: the walk found no read and the kernel was fused
    # horizontally. From an ordinary kernel, the instance is walked and the reads are found.
    (tmp_path / "inc" / "lib").mkdir(parents=True)
    (tmp_path / "inc" / "lib" / "red2.cuh").write_text(POLICY_HEADER)
    source = tmp_path / "k.cu"
    head, t = ("template <typename T>\n", "T") if template else ("\n", "float")
    source.write_text(f"#include <lib/red2.cuh>\n{head}__global__ void k({t}* out, const {t}* in) {{\n"
                      f"  __shared__ {t} sh[32];\n  {t} v = lib2::block_sum<{t}>(in[threadIdx.x], sh);\n"
                      "  out[threadIdx.x] = lib2::combine(v, v, [](float a, float b) { return a + b; });\n}\n")
    meaning = read_meaning([source], CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")]),
                           kept_preamble=["#include <lib/red2.cuh>"], cache=tmp_path)
    assert meaning.unavailable is None
    uses = {u.qualified: u for f in meaning.functions for u in f.uses}
    if template:
        assert uses["lib2::block_sum"].unknown  # refused: what B::Tid() runs is the instance's
    else:
        assert not uses["lib2::block_sum"].unknown
        assert set(uses["lib2::block_sum"].reads) == {"reads threadIdx", "reads blockDim"}
    # a call through a parameter runs the caller's functor: from an ordinary kernel, Clang
    # resolved it (the user's lambda, which hfuse reads as the user's); walked as written for a
    # kernel template, the header's op(a, b) names no code, and the template is refused (given
    # its arguments, the instance is read instead: test_instances.py)
    assert uses["lib2::combine"].unknown == template and not uses["lib2::combine"].reads


REDUCER_HEADER = """#pragma once
namespace lib {
template <typename T>
struct Reducer {
  T* sh;
  __device__ explicit Reducer(T* s) : sh(s) {}
  __device__ T sum(T v) { sh[threadIdx.x] = v; __syncthreads(); return sh[0]; }
};
template <typename T>
__device__ Reducer<T> make_reducer(T* s) { return Reducer<T>(s); }
}
"""

REDUCER_USER = """#include <lib/reducer.cuh>
template <typename T>
__device__ T reduce(T v, T* sh) {
  auto r = lib::make_reducer(sh);
  return r.sum(v);
}
__global__ void k(float* out, const float* in) {
  __shared__ float sh[32];
  float v = reduce<float>(in[threadIdx.x], sh);
  out[threadIdx.x] = v;
}
"""


def test_the_users_own_template_is_read_as_instantiated_where_it_is_called(tmp_path):
    # read as a template, reduce's r.sum(v) names nothing (r's type depends on T): the kernel
    # was fused horizontally while lib::Reducer::sum synchronised the fused block
    (tmp_path / "inc" / "lib").mkdir(parents=True)
    (tmp_path / "inc" / "lib" / "reducer.cuh").write_text(REDUCER_HEADER)
    source = tmp_path / "k.cu"
    source.write_text(REDUCER_USER)
    meaning = read_meaning([source], CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")]),
                           kept_preamble=["#include <lib/reducer.cuh>"], cache=tmp_path)
    kernel = meaning.function(source, "k", 9)
    found = {u.qualified: (u.line, set(u.reads)) for u in kernel.uses if u.reads}
    assert found["lib::Reducer::sum"] == (9, {"reads threadIdx", "synchronises the block"})  # at the call


def test_a_header_that_needs_the_files_own_macros_is_read_with_the_file(tmp_path):
    # its PCH cannot be built from the include lines alone: the file is parsed whole instead
    (tmp_path / "inc" / "lib").mkdir(parents=True)
    (tmp_path / "inc" / "lib" / "needs.h").write_text(
        "#pragma once\n#ifndef LIB_CONFIG\n#error define LIB_CONFIG first\n#endif\n"
        "namespace lib { __device__ inline int tid() { return threadIdx.x; } }\n")
    source = tmp_path / "k.cu"
    source.write_text("#define LIB_CONFIG 1\n#include <lib/needs.h>\n__global__ void k(int* o) { o[0] = lib::tid(); }\n")
    meaning = read_meaning([source], CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")]),
                           kept_preamble=["#include <lib/needs.h>"], cache=tmp_path)
    assert meaning.unavailable is None and meaning.dialect is None
    assert {r for f in meaning.functions for u in f.uses for r in u.reads} == {"reads threadIdx"}


LAMBDAS = C.CORPUS / "real_cpp" / "generic_lambdas.cu"


@pytest.fixture(scope="module")
def lambda_uses(tmp_path_factory) -> dict:
    options = CompileOptions(system_include_dirs=(C.CORPUS / "real_cpp" / "sysinclude",))
    meaning = read_meaning([LAMBDAS], options, kept_preamble=["#include <fakelib/lambdas.h>"],
                           cache=tmp_path_factory.mktemp("cache"))
    assert meaning.unavailable is None
    return {f.name: f.uses for f in meaning.functions}


def test_a_generic_lambdas_read_is_found_in_the_instance_a_call_makes(lambda_uses):
    # the lambda's call operator has no __device__ of its own to see (implicitly host and
    # device): once taken for host code, its instance, called from apply, was not walked
    uses = lambda_uses["lambda_reads_thread"]
    assert "reads threadIdx" in {r for u in uses for r in u.reads} and not any(u.unknown for u in uses)


def test_a_generic_lambda_that_reads_nothing_reads_nothing(lambda_uses):
    assert not any(u.reads or u.unknown for u in lambda_uses["lambda_doubles"])


def test_a_generic_lambdas_body_as_written_does_not_cut_the_walk(lambda_uses):
    # walked as written inside scaled<Twice>, the body's apply_op<Op>(x) named the template,
    # whose Op::of(v) is a call through a template parameter: unknown, and CuTe kernels refused
    assert not any(u.reads or u.unknown for u in lambda_uses["lambda_through_parameter"])


def test_preorder_is_walk_preorder_in_one_pass_and_prunes_what_it_is_told(tmp_path):
    ci, _ = clang_module.cindex()
    arguments = clang_module.clang_arguments(CompileOptions(system_include_dirs=(C.CORPUS / "real_cpp" / "sysinclude",)))
    unit = ci.Index.create().parse(str(LAMBDAS), args=arguments)
    kernel = next(c for c in unit.cursor.get_children() if c.spelling == "lambda_reads_thread")
    assert [n.kind for n in clang_walk.preorder(ci, kernel)] == [n.kind for n in kernel.walk_preorder()]
    no_ifs = clang_walk.preorder(ci, kernel, lambda n: True, ci.CursorKind.IF_STMT.value)
    assert [n.kind for n in no_ifs].count(ci.CursorKind.IF_STMT) == 1
    assert ci.CursorKind.BINARY_OPERATOR not in {n.kind for n in no_ifs[[n.kind for n in no_ifs].index(ci.CursorKind.IF_STMT):]}


def test_preorder_raises_what_its_pruning_raises_instead_of_stopping_short():
    # an exception in a ctypes callback is printed and the walk ends there: a header's read
    # after that point would have gone unseen
    ci, _ = clang_module.cindex()
    arguments = clang_module.clang_arguments(CompileOptions(system_include_dirs=(C.CORPUS / "real_cpp" / "sysinclude",)))
    unit = ci.Index.create().parse(str(LAMBDAS), args=arguments)
    kernel = next(c for c in unit.cursor.get_children() if c.spelling == "lambda_reads_thread")

    def broken(node):
        raise LookupError("pruning failed")

    with pytest.raises(LookupError, match="pruning failed"):
        clang_walk.preorder(ci, kernel, broken, ci.CursorKind.IF_STMT.value)


def test_an_error_is_the_instances_only_where_they_requested_it(tmp_path):
    # an error of the file's own (FlashInfer's sampling header under a newer CUB) is _read's to
    # judge by what the request reaches; it once made every instance of the file "unreadable"
    from types import SimpleNamespace

    path = tmp_path / "k.cu"

    def at(line, file=path):
        return SimpleNamespace(file=SimpleNamespace(name=str(file)), line=line)

    def note(line):
        return SimpleNamespace(location=at(line))

    own = SimpleNamespace(location=at(3), children=[note(2)])
    requested = SimpleNamespace(location=at(7, tmp_path / "lib.cuh"), children=[note(2), note(12)])
    assert not clang_module._requested_after(own, path, 10)
    assert clang_module._requested_after(requested, path, 10)
    assert clang_module._requested_after(SimpleNamespace(location=at(11), children=[]), path, 10)


MIXED_HEADER = "#pragma once\nnamespace lib {\n" + "".join(
    f"inline int host{i}() {{ return undeclared{i}; }}\n" for i in range(25)) + """\
__device__ inline int lane() { return threadIdx.x & 31; }
__device__ inline int plain(int x) { return x + 1; }
__device__ inline int broken() { return threadIdx.x + undeclared; }
}
"""


def test_errors_in_a_kept_headers_code_leave_only_their_functions_unknown(tmp_path):
    # cuDNN frontend's JSON conversions, which nvcc compiles and Clang's CUDA mode rejects, gave
    # Transformer Engine's norm headers 26 errors: Clang stopped at 20 ("too many errors emitted"),
    # leaving the user's file unread, and the headers' PCH was built again (45 s) at every request
    (tmp_path / "inc" / "lib").mkdir(parents=True)
    (tmp_path / "inc" / "lib" / "mixed.cuh").write_text(MIXED_HEADER)
    source = tmp_path / "k.cu"
    source.write_text("#include <lib/mixed.cuh>\n__global__ void k(int* o) { o[0] = lib::lane(); }\n"
                      "__global__ void k2(int* o) { o[0] = lib::broken(); }\n"
                      "__global__ void k3(int* o) { o[0] = lib::plain(1); }\n")
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")])
    for _ in range(2):  # the PCH built with its errors, then read from the cache with them
        clang_module._read_once.cache_clear()
        meaning = read_meaning([source], options, kept_preamble=["#include <lib/mixed.cuh>"], cache=tmp_path)
        assert meaning.unavailable is None, meaning.unavailable
        uses = {name: next(u for u in meaning.function(source, name, line).uses if u.qualified.startswith("lib::"))
                for name, line in (("k", 2), ("k2", 3), ("k3", 4))}
        assert (uses["k"].reads, uses["k"].unknown) == (("reads threadIdx",), False)
        assert uses["k2"].unknown  # (its body did not parse: what it reads is unknown)
        assert (uses["k3"].reads, uses["k3"].unknown) == ((), False)
    assert sorted(p.suffix for p in (tmp_path / "clang").iterdir()) == [".cuh", ".errors", ".inputs", ".pch"]


@pytest.mark.parametrize("arch, reads", [("sm_90", ()), ("sm_90a", ("reads threadIdx",))])
def test_a_kept_header_is_read_for_the_specific_architecture_as_nvcc_compiles_it(tmp_path, arch, reads):
    # Clang is given sm_90 for sm_90a; without sm_90a's feature macros it read the #else of a header's
    # '#if __CUDA_ARCH_HAS_FEATURE__(SM90_ALL)' (Transformer Engine's ptx.cuh), which nvcc does not compile
    (tmp_path / "inc" / "lib").mkdir(parents=True)
    (tmp_path / "inc" / "lib" / "feature.cuh").write_text(
        "#pragma once\nnamespace lib {\n__device__ inline int lane() {\n#if __CUDA_ARCH_HAS_FEATURE__(SM90_ALL)\n"
        "  return threadIdx.x & 31;\n#else\n  return 0;\n#endif\n}\n}\n")
    source = tmp_path / "k.cu"
    source.write_text("#include <lib/feature.cuh>\n__global__ void k(int* o) { o[0] = lib::lane(); }\n")
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")], arch=arch)
    meaning = read_meaning([source], options, kept_preamble=["#include <lib/feature.cuh>"], cache=tmp_path)
    assert meaning.unavailable is None, meaning.unavailable
    assert next(u.reads for u in meaning.function(source, "k", 2).uses if u.qualified == "lib::lane") == reads
