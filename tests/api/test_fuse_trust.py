"""The six ways hfuse wrote fused kernels that were wrong or could not launch, on the
emitted code (CPU). Each has a GPU twin in test_fuse_trust_gpu.py.

1. CUB reached through an alias, a using-declaration, a typedef, an alias template, a
   wrapper struct, a macro or a helper template is refused; warp-level CUB fuses.
2. Part bodies are the user's text with hfuse's edits only: pragmas, ``__align__`` and
   comments survive (a token comparison outside the edited ranges).
3. Explicit specialisations travel with their templates.
4. Without a cap the fused kernel is bounded by its block, so it can launch.
5. The C++ launch helper counts static shared memory before opting in above 48 KiB.
6. Every static ``__shared__`` variable of a part is 16-byte aligned.
"""
from __future__ import annotations

import difflib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hfuse.api import fuse
from hfuse.errors import HFuseError
from hfuse.spec import Dim3, KernelSpec
from hfuse.registers import RegisterCap
from hfuse.frontend.clang_meaning import Meaning
from hfuse.frontend.options import CompileOptions

from corpus import cases as C  # tests/corpus/cases.py
from toolchain import compile_nvcc

TRUST = C.CORPUS / "trust"
CUB = TRUST / "cub_aliases.cu"
PRAGMA = TRUST / "pragma_align.cu"
SPECIAL = TRUST / "specialisation.cu"
RESOURCES = TRUST / "resources.cu"


# --------------------------------------------------------------------------- 1. CUB by meaning
REFUSED = {
    # kernel -> (what the message names, the text of the line it points at)
    "quant::dequant_alias<128, 4>": ("cub::BlockLoad", "using Load = mycub::BlockLoad"),  # namespace mycub = cub;
    "sum_using_declaration": ("cub::BlockReduce", "__shared__ BlockReduce<float, 128>"),  # using cub::BlockReduce;
    "sum_typedef": ("'RowReduce'", "__shared__ RowReduce::TempStorage"),                # a typedef of a typedef
    "sum_alias_template": ("'BlockSum'", "__shared__ typename BlockSum<float>"),         # an alias template
    "sum_wrapper": ("'RowReducer'", "__shared__ RowReducer::Impl"),                     # a struct holding one
    "sum_macro": ("cub::BlockReduce", "__shared__ BLOCK_REDUCE_T::TempStorage"),        # a macro expanding to one
    "sum_helper_template": ("cub::BlockReduce", "__shared__ mycub::BlockReduce"),       # a helper template's argument
    "scan_directive": ("cub::BlockScan", "__shared__ BlockScan<int, 128>"),             # using namespace mycub;
}
REFUSED_EVERYWHERE = {
    "cg_alias": ("'Block'", "Block b = cg::this_thread_block();"),                      # using Block = cg::thread_block;
}


def _line_of(path: Path, kernel: str, text: str) -> int:
    """The line of ``text``, first seen in ``kernel``'s definition."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if f"void {kernel.split('::')[-1].split('<')[0]}(" in line)
    return next(i for i in range(start, len(lines)) if text in lines[i]) + 1


def _spec(path: Path, name: str, block) -> KernelSpec:
    instance = re.match(r"([\w:]+)(?:<(.*)>)?$", name)
    args = tuple(a.strip() for a in instance.group(2).split(",")) if instance.group(2) else ()
    return KernelSpec(path, instance.group(1), Dim3.of(block), args)


@pytest.mark.parametrize("kernel", sorted(REFUSED))
def test_cub_and_cg_through_any_spelling_are_refused_where_the_block_is_shared(kernel):
    what, text = REFUSED[kernel]
    line = _line_of(CUB, kernel, text)
    for layout in ("horizontal", "vertical"):
        with pytest.raises(HFuseError) as err:
            fuse([_spec(CUB, "scale_rows", 96), _spec(CUB, kernel, 128)], layout=layout)
        message = str(err.value)
        assert what in message and f"cannot prove the fused kernel correct in {layout} fusion" in message
        assert err.value.where.line == line and err.value.where.file == CUB


@pytest.mark.parametrize("kernel", sorted(REFUSED))
def test_and_fused_where_each_fused_block_runs_one_whole_block(kernel):
    # CUB reads the raw threadIdx and syncs the whole block: correct where the kernel's block
    # runs alone on the fused block's first threads, the others gone (the GPU twin runs it)
    what, _ = REFUSED[kernel]
    fused = fuse([_spec(CUB, "scale_rows", 96), _spec(CUB, kernel, 128)])
    assert fused.layout.name == "interblock" and len(fused.notes) == 1 and what in fused.notes[0]
    for layout in ("interleaved", "dynamic"):
        assert fuse([_spec(CUB, "scale_rows", 96), _spec(CUB, kernel, 128)], layout=layout).layout.keeps_block_whole


def test_cub_block_type_as_a_template_argument_is_refused_where_the_block_is_shared():
    source = CUB.read_text() + """
template <class Reduce>
__global__ void sum_with(const float* in, float* out) {
  __shared__ typename Reduce::TempStorage storage;
  float s = Reduce(storage).Sum(in[blockIdx.x * 128 + threadIdx.x]);
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}
"""
    spec = KernelSpec(CUB, "sum_with", Dim3(128), ("mycub::BlockReduce<float, 128>",))
    with pytest.raises(HFuseError, match=r"template argument .*cub::BlockReduce"):
        fuse([_spec(CUB, "scale_rows", 96), spec], sources={CUB: source}, layout="horizontal")
    assert fuse([_spec(CUB, "scale_rows", 96), spec], sources={CUB: source}).layout.keeps_block_whole


@pytest.mark.nvcc
def test_the_whole_block_fusions_compile(tmp_path):
    # every CUB spelling at once: inter-block fusion takes any number of kernels
    fused = fuse([_spec(CUB, "scale_rows", 96)] + [_spec(CUB, kernel, 128) for kernel in sorted(REFUSED)])
    assert fused.layout.name == "interblock"
    compile_nvcc(fused.source, workdir=tmp_path)


@pytest.mark.parametrize("layout", ["horizontal", "interblock", None])
def test_cooperative_groups_thread_block_under_another_name_is_refused_by_every_layout(layout):
    what, text = REFUSED_EVERYWHERE["cg_alias"]
    with pytest.raises(HFuseError) as err:
        fuse([_spec(CUB, "scale_rows", 96), _spec(CUB, "cg_alias", 128)], layout=layout)
    assert what in str(err.value) and err.value.where.line == _line_of(CUB, "cg_alias", text)


# ------------------------------------------- 1b. kept-header code that reads the block, found by Clang
HEADER_READS = TRUST / "header_reads.cu"
needs_clang = pytest.mark.skipif(
    isinstance(__import__("hfuse.frontend.clang", fromlist=["x"]).clang_arguments(CompileOptions()), str),
    reason="Clang (libclang-ng) cannot read CUDA here")


@needs_clang
@pytest.mark.parametrize("kernel", ["tid_ptx", "tid_helper"])
def test_header_code_reading_threadIdx_is_refused_where_the_block_is_shared(kernel):
    # libcu++'s cuda::ptx::get_sreg_tid_x() reads %tid.x inside a header hfuse keeps: the
    # second part of a horizontal fusion would read the fused block's thread index
    for layout in ("horizontal", "vertical"):
        with pytest.raises(HFuseError) as err:
            fuse([_spec(HEADER_READS, "scale", 96), _spec(HEADER_READS, kernel, 128)], layout=layout)
        assert "cuda::ptx::get_sreg_tid_x" in str(err.value) and "reads %tid" in str(err.value)
    lines = HEADER_READS.read_text().splitlines()
    # (through the helper template: the call of the instance Clang walked)
    text = "my_thread<unsigned>()" if kernel == "tid_helper" else "cuda::ptx::get_sreg_tid_x"
    line = next(i for i, written in enumerate(lines, 1) if text in written)
    assert err.value.where.line == line and err.value.where.file == HEADER_READS


@needs_clang
@pytest.mark.nvcc
def test_and_fused_by_a_layout_that_keeps_its_block_whole(tmp_path):
    fused = fuse([_spec(HEADER_READS, "scale", 96), _spec(HEADER_READS, "tid_ptx", 128)])
    assert fused.layout.name == "interblock" and "get_sreg_tid_x" in fused.notes[-1]
    compile_nvcc(fused.source, workdir=tmp_path)


@needs_clang
@pytest.mark.parametrize("layout", ["horizontal", "vertical"])
def test_header_code_reading_blockDim_is_refused_where_the_block_is_shared(layout):
    with pytest.raises(HFuseError, match=r"get_sreg_ntid_x.*reads %ntid") as err:
        fuse([_spec(HEADER_READS, "scale", 96), _spec(HEADER_READS, "ntid_ptx", 128)], layout=layout)
    assert err.value.where.line == _line_of(HEADER_READS, "ntid_ptx", "get_sreg_ntid_x")


@needs_clang
@pytest.mark.parametrize("layout", ["interblock", None])
def test_and_where_the_whole_block_is_not_its_own_size(layout):
    # the one-part-per-block layouts launch the largest part's block: %ntid.x reads 256 there
    fused = fuse([_spec(HEADER_READS, "scale", 96), _spec(HEADER_READS, "ntid_ptx", 128)], layout=layout)
    assert fused.layout.name == "interblock"
    with pytest.raises(HFuseError, match=r"get_sreg_ntid_x.*reads %ntid.*the header counts the fused block, "
                                         r"256 threads, which is not the kernel's own block of 128") as err:
        fuse([_spec(HEADER_READS, "scale", 256), _spec(HEADER_READS, "ntid_ptx", 128)], layout=layout)
    assert err.value.where.line == _line_of(HEADER_READS, "ntid_ptx", "get_sreg_ntid_x")


@needs_clang
@pytest.mark.nvcc
def test_header_code_reading_the_lane_fuses_horizontally(tmp_path):
    fused = fuse([_spec(HEADER_READS, "scale", 96), _spec(HEADER_READS, "lane_ptx", 128)])
    assert fused.layout.name == "horizontal" and fused.notes == ()
    compile_nvcc(fused.source, workdir=tmp_path)


def test_without_clang_what_a_file_keeping_unchecked_headers_reaches_is_refused(monkeypatch):
    from hfuse.frontend import clang as clang_module
    from hfuse.frontend import clang_names

    clang_module._read_once.cache_clear()
    clang_names.header_names.cache_clear()
    monkeypatch.setattr(clang_module, "cindex", lambda: (None, "libclang is not usable here (ImportError: no)"))
    # what only Clang could check is refused: cuda::ptx::get_sreg_laneid reads %laneid, which
    # fuses, but get_sreg_tid_x, spelt alike, reads %tid (it fused after a note, once); and
    # without Clang nothing says which names <cuda/ptx> declares, so even a kernel naming none
    # of them is refused (by the names alone, an unqualified name of a header's fused, once)
    for kernel in ("lane_ptx", "scale"):
        with pytest.raises(HFuseError, match=rf"kernel '{kernel}': cannot prove the fused kernel correct: .*"
                                             r"unchecked: libclang is not usable here") as err:
            fuse([_spec(PRAGMA, "pad_bytes", 96), _spec(HEADER_READS, kernel, 128)])
        assert "by the names those headers declare" in str(err.value)
    # a file keeping only the toolkit's checked headers needs no Clang
    assert fuse([_spec(PRAGMA, "pad_bytes", 96), _spec(PRAGMA, "vec_tile", 256)]).layout.name == "horizontal"
    clang_module._read_once.cache_clear()


@pytest.mark.nvcc
def test_warp_level_cub_through_an_alias_fuses_at_an_offset(tmp_path):
    # WarpReduce works on the lane id (%laneid), which a warp-aligned part keeps: correct
    # at thread offset 96 (the GPU twin runs it)
    fused = fuse([_spec(CUB, "scale_rows", 96), _spec(CUB, "warp_sums_alias", 128)])
    assert fused.parts[1].offset == 96
    assert "mycub::WarpReduce<float>" in fused.source
    compile_nvcc(fused.source, workdir=tmp_path)



WRAPPED = TRUST / "cub_wrapped.cu"
WRAPPED_REFUSED = {
    # CUB in the library's own namespace (#define CUB_WRAPPED_NAMESPACE mylib, as MegaBlocks does):
    # kernel -> (what the message names, the text of the line it points at)
    "mylib::ops::row_sum<128>": ("cub::BlockReduce", "using Reduce = cub::BlockReduce"),   # inside mylib
    "wrapped_sum": ("cub::BlockReduce", "typedef mylib::cub::BlockReduce"),               # mylib::cub::
    "qualified_scan": ("cub::BlockScan", "using Scan = CUB_NS_QUALIFIER::BlockScan"),      # CUB's own macro
}


@pytest.mark.parametrize("clang", ["clang", "file unread"])
@pytest.mark.parametrize("kernel", sorted(WRAPPED_REFUSED))
def test_cub_wrapped_in_a_namespace_of_the_librarys_is_still_cub(kernel, clang, monkeypatch):
    # once fused horizontally: Clang read CUB from a precompiled header made without the
    # file's CUB_WRAPPED_NAMESPACE (so mylib::cub did not exist for it), and where Clang could
    # not read the file, mylib::cub::BlockReduce was no CUB name
    import hfuse.header_meaning as header_meaning
    from hfuse.frontend import clang as clang_module

    clang_module._read_once.cache_clear()
    if clang == "file unread":
        monkeypatch.setattr(header_meaning, "read_meaning", lambda *a, **k: Meaning(unavailable="Clang could not read it"))
    what, text = WRAPPED_REFUSED[kernel]
    specs = [_spec(WRAPPED, "scale_rows", 96), _spec(WRAPPED, kernel, 128)]
    with pytest.raises(HFuseError) as err:
        fuse(specs, layout="horizontal")
    assert what in str(err.value) and "cannot prove the fused kernel correct in horizontal fusion" in str(err.value)
    assert err.value.where.line == _line_of(WRAPPED, kernel, text)
    assert fuse(specs).layout.name == "interblock"
    clang_module._read_once.cache_clear()


@pytest.mark.nvcc
def test_wrapped_cub_fusions_compile(tmp_path):
    whole = fuse([_spec(WRAPPED, "scale_rows", 96)] + [_spec(WRAPPED, k, 128) for k in sorted(WRAPPED_REFUSED)])
    assert whole.layout.name == "interblock"
    compile_nvcc(whole.source, workdir=tmp_path / "whole")
    warp = fuse([_spec(WRAPPED, "scale_rows", 96), _spec(WRAPPED, "wrapped_warp_sums", 128)])
    assert warp.layout.name == "horizontal" and warp.parts[1].offset == 96
    assert warp.source.index("#define CUB_WRAPPED_NAMESPACE mylib") < warp.source.index("#include <cub/cub.cuh>")
    compile_nvcc(warp.source, workdir=tmp_path / "warp")

# --------------------------------------------------------------------------- 2. the user's own text
_TOKEN = re.compile(r"""
    (?P<pragma>\#[ \t]*pragma[^\n]*)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<word>[A-Za-z_]\w*)
  | (?P<number>\d[\w.]*)
  | (?P<string>"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')
  | (?P<punct>::|->|\+\+|--|<<|>>|[<>=!+\-*/%&|^]=|&&|\|\||\S)
""", re.X | re.S)


def tokens(text: str) -> list[str]:
    """C++ tokens; a pragma line is one token, a comment is its words (``//`` and ``/* */``
    are the same comment: the preprocessor writes line comments as block comments)."""
    out = []
    for m in _TOKEN.finditer(text):
        if m.lastgroup == "comment":
            out.append("comment:" + " ".join(re.sub(r"^(//|/\*)|\*/$", "", m.group()).split()))
        elif m.lastgroup == "pragma":
            out.append(" ".join(m.group().split()))
        else:
            out.append(m.group())
    return out


PRESERVED = re.compile(r"^(#\s*pragma|comment:|__align__|alignas|__restrict__|const$|volatile$)")
"""Tokens no rewrite of hfuse ever removes from a body."""


def _braced(text: str, start: int) -> str:
    """``text`` from the '{' at or after ``start`` to its matching '}'."""
    at = text.index("{", start)
    depth = 0
    for i in range(at, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[at : i + 1]
    raise AssertionError("unbalanced braces")


def _body(text: str, start: str) -> str:
    """The body of the definition that starts with ``start``."""
    return _braced(text, text.index(start))


def _source_body(path: Path, name: str) -> str:
    text = path.read_text()
    return _braced(text, re.search(rf"__global__ void {name}\(", text).end())


def _removed(source: str, emitted: str) -> list[str]:
    """Source tokens that do not reach the emitted body."""
    a, b = tokens(source), tokens(emitted)
    lost = []
    for op, i1, i2, _, _ in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op in ("delete", "replace"):
            lost += a[i1:i2]
    return lost


@pytest.mark.parametrize("name,block,other", [("tile_dot", 64, "pad_bytes"), ("vec_tile", 256, "pad_bytes"),
                                              ("pad_bytes", 96, "vec_tile")])
def test_part_bodies_are_the_users_text_outside_the_edits(name, block, other):
    kernel = _spec(PRAGMA, f"{name}<32>" if name == "tile_dot" else name, block)
    fused = fuse([_spec(PRAGMA, other, 96 if other == "pad_bytes" else 256), kernel])
    emitted = _body(fused.source, f"void {name}__hf2(")
    source = _source_body(PRAGMA, name)
    lost = _removed(source, emitted)
    # what the rewrites replace: barriers (the built-ins are prefixed, not replaced)
    assert set(lost) <= {"__syncthreads"}, lost
    kept = iter(t for t in tokens(emitted) if PRESERVED.match(t))
    preserved = [t for t in tokens(source) if PRESERVED.match(t)]
    assert preserved and all(t in kept for t in preserved), preserved  # in order (hfuse may add an __align__)


def test_pragmas_survive_the_early_exit_rewrite():
    source = """
__global__ void guarded(const float* in, float* out, int n) {
  __shared__ float t[128];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float r[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) r[k] = in[i] * k;
  t[threadIdx.x] = r[0] + r[3];
  __syncthreads();
  #pragma unroll 2
  for (int k = 0; k < 4; ++k) out[i] += t[(threadIdx.x + k) % blockDim.x] * r[k];
}
__global__ void other(float* out, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] *= 2.0f; }
"""
    path = Path("early.cu")
    fused = fuse([KernelSpec(path, "other", Dim3(64)), KernelSpec(path, "guarded", Dim3(128))], sources={path: source})
    body = _body(fused.source, "void guarded__hf2(")
    assert "hf_active" in body  # the early-exit rewrite restructured it
    lines = [line.strip() for line in body.splitlines()]
    # each pragma stays right before its loop, inside the guarded region
    for pragma in ("#pragma unroll", "#pragma unroll 2"):
        at = lines.index(pragma)
        assert lines[at + 1].startswith("for (int k = 0; k < 4; ++k)")


# --------------------------------------------------------------------------- 3. specialisations
@pytest.mark.nvcc
def test_specialisations_travel_with_their_templates(tmp_path):
    fused = fuse([_spec(PRAGMA, "vec_tile", 256), _spec(SPECIAL, "convert_rows", 128)])
    source = fused.source
    primary = source.index("To convert(From v)")
    for written in ("float convert<float, int>(int v)", "__half2 convert<__half2, float>(float v)",
                    "struct Scale<float>"):
        assert written in source, written
        assert source.index(written) > primary or "Scale" in written
    # the family that reads threadIdx is copied per part, the specialisation renamed with it
    assert "T with_lane__hf2(const hfuse_ctx& hf_ctx, T v)" in source
    assert "float with_lane__hf2<float>(const hfuse_ctx& hf_ctx, float v)" in source
    assert source.index("T with_lane__hf2(") < source.index("with_lane__hf2<float>(const")
    compile_nvcc(source, workdir=tmp_path)


# --------------------------------------------------------------------------- 4. bounded by its block
@pytest.mark.nvcc
def test_without_a_cap_the_fused_kernel_can_launch_at_its_block(tmp_path):
    alone = compile_nvcc(RESOURCES.read_text(), workdir=tmp_path, filename="alone.cu").kernel("heavy_mix")
    assert alone.registers * 1024 > 65536, "the test needs a part too heavy for a 1024-thread block"
    fused = fuse([_spec(RESOURCES, "heavy_mix", 128), _spec(RESOURCES, "light_copy", 896)])
    assert "__launch_bounds__(1024)\n" in fused.source
    assert "no register cap; __launch_bounds__(1024) so that a block of 1024 threads can launch" in fused.source
    kernel = compile_nvcc(fused.source, workdir=tmp_path, filename="fused.cu").kernel(fused.name)
    assert -(-kernel.registers // 8) * 8 * 1024 <= 65536


def test_a_register_maximum_the_block_cannot_have_is_refused():
    with pytest.raises(HFuseError, match=r"register cap r128 cannot apply: a block of 1024 threads at 128 registers"):
        fuse([_spec(RESOURCES, "heavy_mix", 128), _spec(RESOURCES, "light_copy", 896)],
             register_cap=RegisterCap(max_registers=128))
    fused = fuse([_spec(RESOURCES, "heavy_mix", 128), _spec(RESOURCES, "light_copy", 896)],
                 register_cap=RegisterCap(max_registers=64))
    assert "__maxnreg__(64)" in fused.source and "__launch_bounds__" not in fused.source.split("// ---- fused kernel")[1]


# --------------------------------------------------------------------------- 5. the launch helper
@pytest.mark.nvcc
def test_launch_helper_counts_static_shared_memory(tmp_path):
    fused = fuse([_spec(RESOURCES, "static_tile", 256), _spec(RESOURCES, "dynamic_tile", 256)])
    helper = fused.source[fused.source.index("inline cudaError_t"):]
    assert f"cudaFuncGetAttributes(&hf_attr, {fused.name})" in helper
    assert "if (hf_smem + hf_attr.sharedSizeBytes > 48 * 1024)" in helper
    assert helper.index("cudaFuncGetAttributes") < helper.index("cudaFuncSetAttribute") < helper.index("<<<")
    # the helper itself compiles (host and device code, as the user's build does)
    path = tmp_path / "fused.cu"
    path.write_text(fused.source)
    result = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-c", str(path), "-o", str(tmp_path / "fused.o")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr


# --------------------------------------------------------------------------- 6. aligned static shared memory
def _shared_alignments(ptx: str) -> dict[str, int]:
    return {m.group(2): int(m.group(1)) for m in re.finditer(r"\.shared \.align (\d+) \.b8 (\w+)\[", ptx)}


@pytest.mark.nvcc
@pytest.mark.parametrize("first,second", [("pad_bytes", "vec_tile"), ("pad_bytes", "tile_dot<32>"),
                                          ("vec_tile", "pad_bytes")])
def test_static_shared_variables_are_16_byte_aligned(tmp_path, first, second):
    blocks = {"pad_bytes": 96, "vec_tile": 256, "tile_dot<32>": 64}
    fused = fuse([_spec(PRAGMA, first, blocks[first]), _spec(PRAGMA, second, blocks[second])])
    path = tmp_path / "fused.cu"
    path.write_text(fused.source)
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    result = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-ptx", str(path), "-o", str(tmp_path / "fused.ptx")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    found = _shared_alignments((tmp_path / "fused.ptx").read_text())
    statics = {name: align for name, align in found.items() if name != "hfuse_smem"}
    assert len(statics) >= 2 and all(align >= 16 for align in statics.values()), statics


@pytest.mark.nvcc
@pytest.mark.parametrize("path", sorted(TRUST.glob("*.cu")), ids=lambda p: p.name)
def test_the_corpus_files_compile_as_they_are(tmp_path, path):
    """The originals compile with nvcc (a refusal below is then hfuse's, not a broken input)."""
    result = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", *BUILD_DEFINES.get(path.name, ()), "-c", str(path),
                             "-o", str(tmp_path / "o.o")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr


@needs_clang
def test_an_installed_librarys_device_code_reading_threadIdx_is_found(tmp_path):
    # a header of an installed library (-isystem): kept as an #include, never rewritten; its
    # helper reads threadIdx.x and blockDim.x, which no fused layout keeps as the kernel saw them
    (tmp_path / "lib" / "blocklib").mkdir(parents=True)
    (tmp_path / "lib" / "blocklib" / "index.cuh").write_text(
        "#pragma once\nnamespace blocklib {\n"
        "__device__ inline unsigned lane_in_block() { return threadIdx.x; }\n"
        "__device__ inline unsigned flat() { return blockIdx.x * blockDim.x + threadIdx.x; }\n}\n")
    source = tmp_path / "k.cu"
    source.write_text("#include <blocklib/index.cuh>\n"
                      "__global__ void by_lane(unsigned* o) { o[blockIdx.x * 128 + threadIdx.x] = blocklib::lane_in_block(); }\n"
                      "__global__ void by_flat(unsigned* o) { o[blocklib::flat()] = 1u; }\n"
                      "__global__ void plain(float* o) { o[threadIdx.x] = 2.f; }\n")
    options = CompileOptions(system_include_dirs=(tmp_path / "lib",))
    plain = KernelSpec(source, "plain", Dim3(96))
    with pytest.raises(HFuseError, match=r"blocklib::lane_in_block.*reads threadIdx") as err:
        fuse([plain, KernelSpec(source, "by_lane", Dim3(128))], options=options, layout="horizontal")
    assert err.value.where.line == 2
    assert fuse([plain, KernelSpec(source, "by_lane", Dim3(128))], options=options).layout.name == "interblock"
    with pytest.raises(HFuseError, match=r"blocklib::flat.*reads blockDim"):
        fuse([plain, KernelSpec(source, "by_flat", Dim3(128))], options=options)


APPLY = """#include <utility>
template <typename F, typename... Args>
__global__ void multi_apply(int chunk, float* p, F f, Args... args) {
  f(chunk, p, args...);
}
struct Scale {  // the user's own functor, which reads threadIdx
  __device__ void operator()(int n, float* p, float a) { for (int i = threadIdx.x; i < n; i += blockDim.x) p[i] *= a; }
};
__global__ void plain(float* o) { o[threadIdx.x] = 2.f; }
"""


@pytest.mark.nvcc
def test_a_call_through_a_template_parameter_is_read_in_the_instance(tmp_path):
    # apex's and PyTorch's multi_tensor_apply: the functor's type is the instance's
    source = tmp_path / "k.cu"
    source.write_text(APPLY)
    plain = KernelSpec(source, "plain", Dim3(96))
    # as a template, the fused kernel's caller would pick the type: the original Scale, which
    # reads the fused block's threadIdx and blockDim (once fused so, silently wrong)
    with pytest.raises(HFuseError, match=r"through template parameter 'F' with no template arguments") as err:
        fuse([plain, KernelSpec(source, "multi_apply", Dim3(128))])
    assert err.value.where.line == 4 and "multi_apply<...>:128" in err.value.hint
    # the instances the file launches itself are named in the hint
    launched = APPLY + "void run(float* p) { multi_apply<Scale, float><<<4, 128>>>(100, p, Scale{}, 2.f); }\n"
    with pytest.raises(HFuseError) as err:
        fuse([plain, KernelSpec(source, "multi_apply", Dim3(128))], sources={source: launched})
    assert "-k 'multi_apply<Scale, float>:128'" in err.value.hint
    # given, the part calls its own copy of Scale, which takes the part's view of the block
    fused = fuse([plain, KernelSpec(source, "multi_apply", Dim3(128), ("Scale", "float"))])
    assert "multi_apply__hf2<Scale__hf2, float>(" in fused.source
    assert "i < n; i += hf_ctx.blockDim.x" in fused.source
    compile_nvcc(fused.source, workdir=tmp_path)


@pytest.mark.nvcc
def test_a_qualifier_before_a_pack_qualifies_each_type_written_in(tmp_path):
    # const Args of float* is float* const: once written const float*, which nvcc refused
    source = tmp_path / "k.cu"
    source.write_text("template <typename... Args>\n__global__ void first(float* out, const Args... args) {\n"
                      "  const float vals[] = {float(*args)...};\n  out[threadIdx.x] = vals[0];\n}\n"
                      "__global__ void plain(float* o) { o[threadIdx.x] = 2.f; }\n")
    fused = fuse([KernelSpec(source, "plain", Dim3(96)), KernelSpec(source, "first", Dim3(128), ("float*", "int*"))])
    assert "float* const hf2_args0" in fused.source and "int* const hf2_args1" in fused.source
    compile_nvcc(fused.source, workdir=tmp_path)


@needs_clang
def test_an_installed_librarys_functor_given_to_a_kernel_templates_pack_is_read(tmp_path):
    # the functor of an installed library (kept, never rewritten) reads threadIdx: the instance's
    # copy, its pack written out, reaches its operator(); once fused horizontally, silently wrong
    (tmp_path / "lib" / "optlib").mkdir(parents=True)
    (tmp_path / "lib" / "optlib" / "scale.cuh").write_text(
        "#pragma once\nnamespace optlib {\nstruct Scale {\n  __device__ void operator()(int n, float* p, float a) {\n"
        "    for (int i = threadIdx.x; i < n; i += blockDim.x) p[i] *= a;\n  }\n};\n}\n")
    source = tmp_path / "k.cu"
    source.write_text("#include <optlib/scale.cuh>\n" + APPLY)
    options = CompileOptions(system_include_dirs=(tmp_path / "lib",))
    with pytest.raises(HFuseError, match=r"optlib::Scale::operator\(\).*reads threadIdx") as err:
        fuse([KernelSpec(source, "plain", Dim3(96)), KernelSpec(source, "multi_apply", Dim3(128), ("optlib::Scale", "float"))],
             options=options, layout="horizontal")
    assert err.value.where.line == 5


# --------------------------------------------------------------------------- 6b. dynamic shared memory alignment
ALIGNED = TRUST / "aligned_dynamic.cu"


@pytest.mark.parametrize("layout", ["horizontal", "interblock", "vertical"])
def test_a_slice_starts_where_the_parts_arrays_ask(layout):
    # once: every slice started on a 16-byte boundary, so __align__(128) behind 100 bytes began at 112
    fused = fuse([KernelSpec(ALIGNED, "odd_dynamic", Dim3(96)), KernelSpec(ALIGNED, "aligned_slice", Dim3(128))],
                 layout=layout)
    assert [s.smem_align for s in fused.signatures] == [16, 128]
    assert "extern __shared__ __align__(128) unsigned char hfuse_smem[];" in fused.source
    launch = fused.pack([[0, 0, 1], [0, 1]], [Dim3(4), Dim3(4)], [100, 128])
    assert [int(a) for a in launch.args[-5::4]] == [0, 128] and launch.shared_mem == 256
    assert "const unsigned hf_smem2 = (unsigned)((hf_smem + 127) / 128 * 128);" in fused.source


TMA_STORAGE = """#include <cuda.h>
struct alignas(1024) Storage { unsigned char a[8192]; unsigned long long bar; };
__global__ void tma_tile(const __grid_constant__ CUtensorMap tmap, float* out) {
  extern __shared__ char smem_raw[];  // CUTLASS's way: cast to an aligned struct, no alignment written here
  Storage& st = *reinterpret_cast<Storage*>(smem_raw);
  if (threadIdx.x == 0) asm volatile("prefetch.tensormap [%0];" :: "l"(&tmap) : "memory");
  __syncthreads();
  out[blockIdx.x * 128 + threadIdx.x] = st.a[threadIdx.x];
}
"""


def test_a_slice_handed_to_tma_starts_as_a_launch_of_its_own_would(tmp_path):
    # a 128-byte swizzle is computed from the address bits: behind another part's 100 bytes the
    # slice began at 112, and the swizzled tile would have been read as another layout
    path = tmp_path / "tma.cu"
    path.write_text(TMA_STORAGE)
    fused = fuse([KernelSpec(ALIGNED, "odd_dynamic", Dim3(96)), KernelSpec(path, "tma_tile", Dim3(128))])
    assert [s.smem_align for s in fused.signatures] == [16, 1024]
    assert "extern __shared__ __align__(1024) unsigned char hfuse_smem[];" in fused.source
    compile_nvcc(fused.source, workdir=tmp_path)


@pytest.mark.nvcc
def test_the_aligned_fusion_compiles(tmp_path):
    fused = fuse([KernelSpec(ALIGNED, "odd_dynamic", Dim3(96)), KernelSpec(ALIGNED, "aligned_slice", Dim3(128))])
    compile_nvcc(fused.source, workdir=tmp_path)


# --------------------------------------------------------------------------- 5b. static shared memory above 48 KiB
def test_static_shared_memory_a_kernel_cannot_declare_is_refused_with_the_parts_sizes(tmp_path):
    # once: a ptxas error ("uses too much shared data") from the fused file, and no word from hfuse
    source = tmp_path / "tiles.cu"
    source.write_text("template <int kTile>\n__global__ void tile_a(float* o) {\n"
                      "  __shared__ float t[kTile][kTile];\n  t[threadIdx.x][0] = 1.f;\n  o[threadIdx.x] = t[0][threadIdx.x];\n}\n"
                      "__global__ void tile_b(double* o) {\n  __shared__ double u[3000];\n  u[threadIdx.x] = 2.0;\n"
                      "  o[threadIdx.x] = u[0];\n}\n")
    a, b = KernelSpec(source, "tile_a", Dim3(96), ("96",)), KernelSpec(source, "tile_b", Dim3(128))
    for layout in ("horizontal", "interblock"):
        with pytest.raises(HFuseError, match=r"adds up to 60864 bytes \(tile_a: 36864 B, tile_b: 24000 B\)") as err:
            fuse([a, b], layout=layout)
        assert err.value.where.kernel == "tile_a" and "extern __shared__" in err.value.hint
    fuse([KernelSpec(source, "tile_a", Dim3(64), ("64",)), b])  # 16 KiB + 24000 B: fits


NAMED = TRUST / "named_barriers.cu"


@pytest.mark.parametrize("kernel, call", [("reverse_named", "__barrier_sync"), ("reverse_counted", "__barrier_sync_count")])
def test_named_barriers_by_id_fuse_only_where_the_block_is_whole(kernel, call, tmp_path):
    # once fused horizontally as written: their barrier ids and counts were the fused block's
    with pytest.raises(HFuseError, match=f"'{call}' waits at one of the block's named barriers") as err:
        fuse([_spec(NAMED, "scale", 96), _spec(NAMED, kernel, 128)], layout="horizontal")
    assert err.value.where.line == _line_of(NAMED, kernel, call)
    fused = fuse([_spec(NAMED, "scale", 96), _spec(NAMED, kernel, 128)])
    assert fused.layout.name == "interblock" and call in fused.notes[0]
    compile_nvcc(fused.source, workdir=tmp_path)



@pytest.mark.parametrize("kernel, block, written", [
    ("produce_consume", 256, ('asm volatile("bar.arrive %0, %1;"', 'asm volatile("bar.sync %0, %1;"')),
    ("tid_from_ptx", 128, ('asm("mov.u32 %0, %%tid.x;"',)),
])
def test_inline_ptx_barriers_and_thread_index_fuse_only_where_the_block_is_whole(kernel, block, written, tmp_path):
    # once refused in every layout; horizontally their ids, counts and %tid would be the fused block's
    with pytest.raises(HFuseError, match="inline PTX that (synchronises the block by barrier id|reads %tid)"):
        fuse([_spec(NAMED, "scale", 96), _spec(NAMED, kernel, block)], layout="horizontal")
    fused = fuse([_spec(NAMED, "scale", 96), _spec(NAMED, kernel, block)])
    assert fused.layout.name == "interblock" and "inline PTX" in fused.notes[0]
    assert all(asm in fused.source for asm in written)  # as the user wrote it
    compile_nvcc(fused.source, workdir=tmp_path)


def test_the_thread_index_read_in_ptx_needs_a_1d_block_where_it_runs_whole():
    # once fused: the one-part-per-block layouts launch a 1-D block, so %tid.y was 0 and %tid.x
    # the linear index for a kernel written for 32x4
    with pytest.raises(HFuseError, match=r"reads %tid; where its block runs whole, the fused block is 1-D") as err:
        fuse([_spec(NAMED, "scale", 96), _spec(NAMED, "tid_from_ptx", (32, 4))])
    assert err.value.where.line == _line_of(NAMED, "tid_from_ptx", "%%tid.x")


# --------------------------------------------------------------------------- a name defined two ways
BUILD_DEFINES = {"macro_scale_a.cu": ("-DROW_SCALE=2.0f",), "macro_scale_b.cu": ("-DROW_SCALE=3.0f",)}
"""The -D each file's own build gives it."""


def _own_build(name: str, kernel: str, block: int) -> KernelSpec:
    defines = [d.removeprefix("-D") for d in BUILD_DEFINES.get(name, ())]
    return KernelSpec(TRUST / name, kernel, Dim3(block), options=CompileOptions.from_flags(defines=defines))


def _part_text(source: str, index: int) -> str:
    return source.split(f"// ---- part {index}:")[1].split("// ---- ")[0]


@pytest.mark.nvcc
@pytest.mark.parametrize("b_first", [False, True])
def test_each_part_calls_among_its_own_files_overloads(tmp_path, b_first):
    # once: b.cu's nudge(float), identical to a.cu's, was read once for both, and part 2 had only
    # its file's other overload: its float call ran nudge(double), compiled, and computed something else
    # (b.cu first: refused, as a.cu lacked nudge(double))
    specs = [KernelSpec(TRUST / "overloads_a.cu", "nudge_rows", Dim3(96)),
             KernelSpec(TRUST / "overloads_b.cu", "nudge_cols", Dim3(128))]
    fused = fuse(specs[::-1] if b_first else specs)
    a, b = (2, 1) if b_first else (1, 2)
    assert re.search(rf"float nudge__hf{b}\([^)]*float v\) \{{ return v \+ 1\.0f; \}}", _part_text(fused.source, b))
    assert re.search(rf"float nudge__hf{b}\([^)]*double v\)", _part_text(fused.source, b))
    assert "double" not in _part_text(fused.source, a)
    compile_nvcc(fused.source, workdir=tmp_path)


@pytest.mark.nvcc
def test_one_header_read_with_two_builds_macros_gives_each_part_its_own_helper(tmp_path):
    # once: both expansions of row_scaled were emitted under one name: "already been defined"
    fused = fuse([_own_build("macro_scale_a.cu", "scale_a", 96), _own_build("macro_scale_b.cu", "scale_b", 128)])
    assert "return 2.0f * v;" in _part_text(fused.source, 1) and "return 3.0f * v;" in _part_text(fused.source, 2)
    compile_nvcc(fused.source, workdir=tmp_path)


@pytest.mark.nvcc
def test_one_name_of_file_scope_dynamic_shared_memory_with_two_element_types(tmp_path):
    fused = fuse([KernelSpec(TRUST / "extern_smem_a.cu", "reverse_floats", Dim3(128)),
                  KernelSpec(TRUST / "extern_smem_b.cu", "rotate_quads", Dim3(64))])
    assert "reinterpret_cast<float (*)[]>(hf_ctx.dyn_smem))[t]" in _part_text(fused.source, 1)
    assert "reinterpret_cast<int4 (*)[]>(hf_ctx.dyn_smem))[(t + 1) %" in _part_text(fused.source, 2)
    assert "extern __shared__ float smem" not in fused.source  # (every use names the part's slice)
    compile_nvcc(fused.source, workdir=tmp_path)


@pytest.mark.nvcc
def test_classes_with_member_functions_defined_differently_are_one_per_part(tmp_path):
    fused = fuse([KernelSpec(TRUST / "classes_a.cu", "combine_a", Dim3(96)),
                  KernelSpec(TRUST / "classes_b.cu", "combine_b", Dim3(128))])
    first, second = _part_text(fused.source, 1), _part_text(fused.source, 2)
    assert "Vec2__hf1 operator+(const Vec2__hf1& o) const { return Vec2__hf1(x + o.x, y + o.y); }" in first
    assert "Vec2__hf2 operator+(const Vec2__hf2& o) const { return Vec2__hf2(x * o.x, y * o.y); }" in second
    assert "return v * T(2);" in first and "return v + T(5);" in second
    # Lane reads the block: a context type, its own file's only, once
    assert first.count("struct Lane__hf1 {") == 1 and "threadIdx.x & 31" in first and "% 32" not in first
    assert second.count("struct Lane__hf2 {") == 1 and "% 32) * 3 + 1" in second
    compile_nvcc(fused.source, workdir=tmp_path)


@pytest.mark.nvcc
@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_class_template_families_written_differently_are_one_per_part(tmp_path, order):
    specs = [KernelSpec(TRUST / "families_a.cu", "block_sums_a", Dim3(128), ("float",)),
             KernelSpec(TRUST / "families_b.cu", "block_max_b", Dim3(256), ("float",))]
    fused = fuse([specs[i] for i in order])
    a, b = (order.index(0) + 1, order.index(1) + 1)  # each file's part
    first, second = _part_text(fused.source, a), _part_text(fused.source, b)
    # the whole family of its own file, in order, renamed: the forward-declared primary too
    assert re.search(rf"struct SharedMemory__hf{a} \{{.*struct SharedMemory__hf{a}<double> \{{", first, re.S)
    assert re.search(rf"struct Scale__hf{a};\s*template <> struct Scale__hf{a}<float>", first)
    assert second.count(f"struct SharedMemory__hf{b}") == 1  # (its own primary only: no double specialisation)
    assert "<double>" not in second and f"struct Scale__hf{b} {{ static constexpr T value = T(3); }};" in second
    # what each part's Scale<float> means, asked of nvcc: 2 in a's family, 3 in b's
    meaning = (f"\nstatic_assert(Scale__hf{a}<float>::value == 2.f && Scale__hf{b}<float>::value == 3.f, "
               "\"each part's own family\");\n")
    compile_nvcc(fused.source + meaning, workdir=tmp_path)
