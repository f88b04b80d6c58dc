"""Real C++ the front end once misread (issue 20), each on the emitted code."""
from __future__ import annotations

from dataclasses import replace

import pytest

from hfuse.api import fuse
from hfuse.errors import HFuseError
from hfuse.frontend.options import CompileOptions
from hfuse.spec import Dim3, KernelSpec

from corpus import cases as C
from toolchain import compile_nvcc, compile_nvrtc

DECLARATIONS = C.CORPUS / "real_cpp" / "declarations.cu"


@pytest.fixture(scope="module")
def fused():
    return fuse([KernelSpec(DECLARATIONS, "k1", Dim3(128), ("float",)), KernelSpec(DECLARATIONS, "k2", Dim3(128))])


def test_helpers_and_operators_returning_references_are_read(fused):
    # once: "cannot find the function's declarator" for the whole file
    assert "__device__ __forceinline__ float& at(float* p, int i)" in fused.source
    assert "__device__ inline V& operator+=(V& a, const V& b)" in fused.source


def test_a_comment_between_the_template_header_and_the_kernel_hides_nothing(fused):
    assert [p.spec.name for p in fused.parts] == ["k1", "k2"]  # once: "no __global__ kernel named 'k1'"


def test_a_qualified_call_broken_across_lines_takes_its_callee(fused):
    assert "__device__ float twice(float v)" in fused.source  # once left out: the output did not compile


@pytest.mark.nvcc
def test_the_fused_file_compiles(fused, tmp_path):
    compile_nvcc(fused.source, workdir=tmp_path)


def test_launch_bounds_are_constant_expressions_of_the_instance():
    # (BM * BN) / (TM * TN) = 256 for <4, 4>: once read as 1, and the kernel refused at its own block
    fused = fuse([KernelSpec(DECLARATIONS, "tile_bounded", Dim3(256), ("4", "4")),
                  KernelSpec(DECLARATIONS, "param_bounded", Dim3(128), ("128",))])
    assert [p.block for p in fused.parts] == [Dim3(256), Dim3(128)]
    # __launch_bounds__(NUM_THREADS) with NUM_THREADS = 128: once read as no bound at all
    with pytest.raises(HFuseError, match=r"__launch_bounds__\(NUM_THREADS, \.\.\.\) = 128"):
        fuse([KernelSpec(DECLARATIONS, "tile_bounded", Dim3(256), ("4", "4")),
              KernelSpec(DECLARATIONS, "param_bounded", Dim3(256), ("128",))])


def test_overloaded_kernels_are_told_apart_by_their_template_arguments():
    # once: the last definition of the name won, whatever was asked for
    plain = fuse([KernelSpec(DECLARATIONS, "fill", Dim3(128)), KernelSpec(DECLARATIONS, "k2", Dim3(128))])
    assert plain.parts[0].kernel.template_params == () and "float v)" in plain.parts[0].kernel.text.split("{")[0]
    templated = fuse([KernelSpec(DECLARATIONS, "fill", Dim3(128), ("int",)), KernelSpec(DECLARATIONS, "k2", Dim3(128))])
    assert templated.parts[0].kernel.template_params == ("T",)
    with pytest.raises(HFuseError, match="names 2 kernels of one name"):
        fuse([KernelSpec(DECLARATIONS, "fill", Dim3(128), ("int", "4")), KernelSpec(DECLARATIONS, "k2", Dim3(128))])


SFINAE = C.CORPUS / "styles" / "overloads.cu"


def _overload(name: str, block: int, *args: str):
    return fuse([KernelSpec(SFINAE, name, Dim3(block), args), AXPY]).parts[0].kernel


def test_kernel_templates_of_one_name_are_chosen_as_the_compiler_chooses():
    # vLLM's fused_add_rms_norm_kernel: two templates of one name and parameter list, one
    # enabled for packed 16-bit types (std::enable_if_t on the return type), one for the rest;
    # once refused ("2 of them take 3 template argument(s)") whatever the arguments
    packed = _overload("serve::add_rms_norm", 128, "__half", "8", "128")
    scalar = _overload("serve::add_rms_norm", 128, "__half", "1", "128")
    other = _overload("serve::add_rms_norm", 128, "int", "2", "128")  # not packed: the scalar one, whatever W
    assert "Pack<T, W> p = xs[i];" in packed.text and "(W > 1) && Convert<T>::kPacked" in packed.text
    assert scalar.line == other.line != packed.line and "(W == 1) || !Convert<T>::kPacked" in scalar.text
    # SFINAE on a defaulted template parameter, the default filled in by the compiler
    assert "- 1.f" in _overload("serve::scale_rows", 128, "float", "1").text
    assert "- 1.f" not in _overload("serve::scale_rows", 128, "float", "4").text


def test_an_instance_no_overload_compiles_is_refused_with_the_compilers_reason():
    # W = 3 enables the packed template, whose Pack<__half, 3> asks for an alignment of 6 bytes
    with pytest.raises(HFuseError, match=r"cannot tell which one 'serve::add_rms_norm<__half, 3, 128>' is: Clang: "
                                         r"requested alignment is not a power of 2") as err:
        _overload("serve::add_rms_norm", 128, "__half", "3", "128")
    assert err.value.where.line == SFINAE.read_text().splitlines().index("template <typename T, int W, int kThreads>") + 1


def test_an_overload_fused_beside_its_sibling_keeps_each_its_own_body():
    fused = fuse([KernelSpec(SFINAE, "serve::add_rms_norm", Dim3(128), ("__half", "8", "128")),
                  KernelSpec(SFINAE, "serve::add_rms_norm", Dim3(64), ("float", "1", "64"))])
    first, second = (fused.source.split(f"void add_rms_norm__hf{i}(")[1].split("\n}\n")[0] for i in (1, 2))
    assert "p += rs[i];" in first and "p += rs[i];" not in second and "rr[i] = static_cast<T>(v);" in second


@pytest.mark.nvcc
def test_the_corpus_file_compiles_as_it_is(tmp_path):
    import subprocess

    result = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-c", str(DECLARATIONS), "-o", str(tmp_path / "o.o")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr


NAMES = C.CORPUS / "real_cpp" / "names.cu"


@pytest.mark.nvcc
def test_enum_constants_and_what_static_asserts_name_come_along(tmp_path):
    fused = fuse([KernelSpec(NAMES, "k", Dim3(128)), KernelSpec(NAMES, "k2", Dim3(128))])
    assert "enum Mode { MODE_ADD = 1, MODE_MUL = 2 };" in fused.source  # used only as MODE_MUL
    assert "enum Op : int { OP_NEG = 3, OP_ABS = 4 };" in fused.source  # used only as lib::OP_ABS
    assert fused.source.index("typedef float real_t;") < fused.source.index("static_assert(sizeof(real_t)")
    compile_nvcc(fused.source, workdir=tmp_path)


@pytest.mark.nvrtc
def test_what_nvcc_includes_implicitly_compiles_under_nvrtc(tmp_path):
    from toolchain import compile_nvrtc

    path = C.CORPUS / "real_cpp" / "implicit.cu"
    fused = fuse([KernelSpec(path, "phase", Dim3(128)), KernelSpec(path, "halve", Dim3(128))])
    assert "typedef unsigned int uint;" in fused.source and "#define M_PI" in fused.source
    compile_nvrtc(fused.source, [fused.name_expression])  # once: uint, M_PI and INFINITY undefined
    compile_nvcc(fused.source, workdir=tmp_path)


@pytest.mark.nvcc
def test_a_constexpr_tile_size_is_read(tmp_path):
    # once: "only warp-sized or smaller tiles (a literal <= 32)" for tiled_partition<kTile>
    path = C.CORPUS / "real_cpp" / "cg_constexpr.cu"
    fused = fuse([KernelSpec(path, "scale", Dim3(96)), KernelSpec(path, "warp_sums", Dim3(128))])
    assert "tiled_partition<kTile>(cooperative_groups::this_thread_block())" in fused.source
    compile_nvcc(fused.source, workdir=tmp_path)


@pytest.mark.nvcc
def test_a_helpers_tile_size_of_a_file_scope_constexpr_is_asked_of_clang(tmp_path):
    # once: "tiled_partition of a thread block into tiles of kHalfWarp threads: only warp-sized
    # or smaller tiles" for a helper's tile (only the kernel's own tile sizes were asked)
    pytest.importorskip("clang.cindex")
    path = C.CORPUS / "real_cpp" / "cg_constexpr.cu"
    fused = fuse([KernelSpec(path, "scale", Dim3(96)), KernelSpec(path, "tile_sums", Dim3(128))])
    assert "tiled_partition<kHalfWarp>(cooperative_groups::this_thread_block())" in fused.source
    assert "partial[(tile.meta_group_rank() - 6u)]" in fused.source  # counted from the part's first warp (96 / 16)
    compile_nvcc(fused.source, workdir=tmp_path)


def test_a_helpers_tile_of_a_file_scope_constexpr_above_a_warp_is_still_refused(tmp_path):
    pytest.importorskip("clang.cindex")
    path = tmp_path / "wide.cu"
    text = (C.CORPUS / "real_cpp" / "cg_constexpr.cu").read_text().replace("kHalfWarp = 16", "kHalfWarp = 64")
    path.write_text(text.replace("partial[tile.meta_group_rank()]", "partial[threadIdx.x / 64]"))
    with pytest.raises(HFuseError, match=r"tiles of kHalfWarp = 64 threads: only warp-sized or smaller"):
        fuse([KernelSpec(path, "scale", Dim3(96)), KernelSpec(path, "tile_sums", Dim3(128))])


def test_align_of_a_sizeof_parses():
    from hfuse.frontend.parse import mask

    text = b"__shared__ __align__(sizeof(float4)) float t[4];"
    assert mask(text) == b"__shared__" + b" " * len(b" __align__(sizeof(float4))") + b" float t[4];"


@pytest.mark.nvcc
def test_a_helper_two_files_define_differently_is_renamed_per_part(tmp_path):
    # once: "'helper' is defined differently here and in ...: rename one of them"
    a, b = C.CORPUS / "real_cpp" / "same_name_a.cu", C.CORPUS / "real_cpp" / "same_name_b.cu"
    fused = fuse([KernelSpec(a, "ka", Dim3(128)), KernelSpec(b, "kb", Dim3(128))])
    assert "float helper__hf1(const hfuse_ctx& hf_ctx, float v) { return v * 2.0f; }" in fused.source
    assert "float helper__hf2(const hfuse_ctx& hf_ctx, float v) { return v - 3.0f; }" in fused.source
    # the caller both files define alike is copied too, each copy calling its own part's helper
    assert "return helper__hf1(hf_ctx, v) + 1.0f;" in fused.source and "return helper__hf2(hf_ctx, v) + 1.0f;" in fused.source
    assert "__device__ float helper(float v)" not in fused.source
    compile_nvcc(fused.source, workdir=tmp_path)


@pytest.mark.nvcc
def test_what_only_the_template_arguments_name_comes_along(tmp_path):
    # once: ops::Scale (and the typedef it uses) left out, the output did not compile
    path = C.CORPUS / "real_cpp" / "functor.cu"
    fused = fuse([KernelSpec(path, "apply", Dim3(128), ("ops::Scale", "float")), KernelSpec(path, "negate", Dim3(128))])
    assert "struct Scale {" in fused.source and "typedef float acc_t;" in fused.source
    compile_nvcc(fused.source, workdir=tmp_path)


@pytest.mark.nvcc
@pytest.mark.nvrtc
def test_conditionals_on_macros_of_system_headers(tmp_path):
    # once: UCHAR_MAX unknown after <limits.h>: "#error ... nvcc would too" (it would not)
    from toolchain import compile_nvrtc

    path = C.CORPUS / "real_cpp" / "system_macros.cu"
    fused = fuse([KernelSpec(path, "posix_path", Dim3(128)), KernelSpec(path, "plain", Dim3(128))])
    assert "__SCHAR_MAX__" not in fused.source  # macros expanded down to what both compilers know
    compile_nvcc(fused.source, workdir=tmp_path)
    compile_nvrtc(fused.source, [fused.name_expression])


USING_STD = """
#include <type_traits>
#include <cuda_bf16.h>
using namespace std;
template <typename T>
__global__ void to_float(float* y, const T* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if constexpr (is_same_v<T, __nv_bfloat16>) y[i] = __bfloat162float(x[i]);
  else y[i] = static_cast<float>(x[i]) + static_cast<float>(is_integral<T>::value);
}
"""


@pytest.mark.nvcc
@pytest.mark.nvrtc
@pytest.mark.parametrize("instance", ["__nv_bfloat16", "int"])
def test_using_namespace_std_stays_for_the_device_code_that_leans_on_it(tmp_path, instance):
    # once dropped with the host code: 'is_same_v' undefined in the fused file
    from toolchain import compile_nvrtc

    fused = fuse([AXPY, KernelSpec("k.cu", "to_float", Dim3(128), (instance,))], sources={"k.cu": USING_STD})
    assert "\nusing namespace std;\n" in fused.source
    assert fused.source.index("namespace std {") < fused.source.index("using namespace std;")  # NVRTC: std exists
    compile_nvcc(fused.source, workdir=tmp_path)
    compile_nvrtc(fused.source, [fused.name_expression])


USING_STD_NAMES = """
#include <limits>
#include <algorithm>
#include <vector>
using std::numeric_limits;
using std::min;
using std::vector;
__global__ void clamp_half_max(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = min(x[i], numeric_limits<float>::max() / 2.f);
}
void host_only() { vector<int> v(3); }
"""


@pytest.mark.nvcc
@pytest.mark.nvrtc
def test_using_declarations_of_std_names_stay_where_device_code_names_them(tmp_path):
    # once dropped with the host code: 'numeric_limits' undefined; 'vector' stays out (host code)
    from toolchain import compile_nvrtc

    fused = fuse([AXPY, KernelSpec("k.cu", "clamp_half_max", Dim3(128))], sources={"k.cu": USING_STD_NAMES})
    assert "using std::numeric_limits;" in fused.source and "using std::min;" in fused.source
    assert "vector" not in fused.source.split("// ---- hfuse support")[1]
    compile_nvcc(fused.source, workdir=tmp_path, flags=["--expt-relaxed-constexpr"])
    compile_nvrtc(fused.source, [fused.name_expression])


TRAITS_STORAGE = """
struct Tile { float v[128]; };
template <int kThreads_>
struct Traits {
  static constexpr int kThreads = kThreads_;
  struct Reverser {
    Tile& tile;
    __device__ explicit Reverser(Tile& t) : tile(t) {}
    __device__ float at(int i) const { return tile.v[kThreads - 1 - i]; }
  };
};
template <typename Ktraits>
__global__ void reverse_rows(const float* in, float* out) {
  extern __shared__ char smem_[];
  auto& tile = reinterpret_cast<Tile&>(smem_);
  const Tile& seen = *reinterpret_cast<const Tile*>(&smem_);
  tile.v[threadIdx.x] = in[blockIdx.x * Ktraits::kThreads + threadIdx.x];
  __syncthreads();
  out[blockIdx.x * Ktraits::kThreads + threadIdx.x] = typename Ktraits::Reverser(tile).at(threadIdx.x) + seen.v[0];
}
"""


@pytest.mark.nvcc
def test_a_functional_cast_to_a_dependent_type_and_the_storage_of_dynamic_shared_memory(tmp_path):
    # once: 'typename Ktraits::Reverser(tile).at(i)' (Mamba's scans call CUB so) did not parse; and
    # 'reinterpret_cast<Tile&>(smem_)' reinterpreted a pointer variable, not the shared memory
    fused = fuse([AXPY, KernelSpec("k.cu", "reverse_rows", Dim3(128), ("Traits<128>",))], sources={"k.cu": TRAITS_STORAGE})
    assert "char (&smem_)[] = *reinterpret_cast<char (*)[]>(hf_ctx.dyn_smem);" in fused.source
    assert "typename Ktraits::Reverser(tile).at(hf_ctx.threadIdx.x)" in fused.source
    assert "*reinterpret_cast<const Tile*>(&smem_);" in fused.source
    compile_nvcc(fused.source, workdir=tmp_path)


def test_system_header_macros_come_from_the_host_compiler():
    from hfuse.frontend.system_macros import header_macros

    macros = dict(header_macros("limits.h"))
    if not macros:
        pytest.skip("no host C++ compiler")
    assert "UCHAR_MAX" in macros and "__SCHAR_MAX__" in macros
    assert "__cplusplus" not in macros  # the compiler's own predefined macros are the device pass's business


@pytest.mark.nvcc
def test_a_struct_declared_in_one_header_and_defined_in_another(tmp_path):
    # once: "'Params' is defined differently" (a forward declaration beside its definition)
    folder = C.CORPUS / "real_cpp" / "forward"
    fused = fuse([KernelSpec(folder / "a.cu", "ka", Dim3(128)), KernelSpec(folder / "b.cu", "kb", Dim3(128))])
    assert "struct Params { float scale; int n; };" in fused.source
    compile_nvcc(fused.source, workdir=tmp_path)


@pytest.mark.nvcc
def test_default_template_arguments_are_applied(tmp_path):
    # once: "2 template arguments given but the kernel has 3 template parameters"
    path = C.CORPUS / "real_cpp" / "defaults.cu"
    fused = fuse([KernelSpec(path, "k", Dim3(128), ("float", "1")), KernelSpec(path, "z", Dim3(128))])
    assert "::k__hf1<float, 1, float>(" in fused.source  # U = T
    compile_nvcc(fused.source, workdir=tmp_path)


STYLES = C.CORPUS / "styles"
AXPY = KernelSpec(STYLES / "partner.cu", "axpy", Dim3(96))


def test_an_unnamed_sfinae_parameter_leaves_the_signature_as_written():
    # once: the empty name was substituted between every character ('0const0 float0* 0__restrict__0')
    fused = fuse([AXPY, KernelSpec(STYLES / "traits.cu", "power_kernel", Dim3(256), ("float", "kSquare"))])
    assert "    const float* __restrict__ hf2_in," in fused.source and "0const0" not in fused.source
    assert "power_kernel__hf2<float, kSquare, 0>(" in fused.source  # the default of the unnamed parameter


def test_a_parameter_pack_becomes_one_parameter_per_type():
    fused = fuse([AXPY, KernelSpec(STYLES / "elementwise.cu", "ew::sum_n_kernel", Dim3(128),
                                   ("float", "int", "float", "double"))])
    assert fused.signatures[1].names[-3:] == ("hf2_ins0", "hf2_ins1", "hf2_ins2")
    assert "const double* __restrict__ hf2_ins2," in fused.source
    assert "sum_n_kernel__hf2<float, int, float, double>(hf2_out, hf2_n, hf2_ins0, hf2_ins1, hf2_ins2, hf_ctx)" in fused.source


def test_a_tile_of_a_template_size_is_counted_in_the_parts_block():
    fused = fuse([AXPY, KernelSpec(STYLES / "norms.cu", "norms::layer_norm_tiles", Dim3(128), ("16",))])
    assert "(tile.meta_group_rank() - 6u)" in fused.source  # 96 threads before it: 6 tiles of 16


CLASH_A, CLASH_B = C.CORPUS / "real_cpp" / "clash_a.cu", C.CORPUS / "real_cpp" / "clash_b.cu"


@pytest.fixture(scope="module")
def clashing():
    # once refused: "'Params' is defined differently here and in clash_a.cu"
    return fuse([KernelSpec(CLASH_A, "ka", Dim3(128)), KernelSpec(CLASH_B, "kb", Dim3(96))])


def test_types_typedefs_and_constants_defined_differently_are_one_per_part(clashing):
    source = clashing.source
    assert "typedef float real__hf1;" in source and "typedef double real__hf2;" in source
    assert "constexpr int kScale__hf1 = 2;" in source and "constexpr int kScale__hf2 = 3;" in source
    assert "constexpr T kHalf__hf1 = T(1) / T(2);" in source and "constexpr T kHalf__hf2 = T(1) / T(4);" in source
    assert "* kHalf__hf1<real__hf1> +" in source and "* kHalf__hf2<real__hf2> +" in source
    assert "struct Params__hf1 {" in source and "struct Params__hf2 {" in source
    assert "x * p.alpha + p.beta * kScale__hf2" in source  # each part's helper names its own
    # the kernels' parameters too, in the body functions and in the fused kernel
    assert "void ka__hf1(const real__hf1* __restrict__ in, real__hf1* __restrict__ out, Params__hf1 p," in source
    assert "    Params__hf2 hf2_p," in source
    assert clashing.symbol_names == ()  # types are no device data for the launcher to fill
    # an enum once per part, however many names it declares; a member named through its class's name
    assert source.count("enum Rounding__hf1 {") == 1 and source.count("enum Rounding__hf2 {") == 1
    assert "i / Tile__hf1::width + (r == kDown__hf1)" in source and "i / Tile__hf2::width" in source


@pytest.mark.nvcc
def test_and_the_file_compiles(clashing, tmp_path):
    compile_nvcc(clashing.source, workdir=tmp_path)


@pytest.mark.nvcc
def test_a_type_both_share_that_names_a_renamed_one_is_one_per_part_too(tmp_path):
    # once refused: "'Holder' is the same in the inputs but names 'Params'"; the same text
    # means each input's own Params, so each part has its own Holder
    shared = "struct Holder { Params p; };\n"
    a = CLASH_A.read_text().replace("__device__ real apply", shared + "__device__ real apply")
    b = CLASH_B.read_text().replace("__device__ real apply", shared + "__device__ real apply")
    fused = fuse([KernelSpec(CLASH_A, "ka", Dim3(128)), KernelSpec(CLASH_B, "kb", Dim3(96))],
                 sources={CLASH_A: a.replace("apply(in[i], p)", "apply(in[i], Holder{p}.p)"),
                          CLASH_B: b.replace("apply(in[i], p)", "apply(in[i], Holder{p}.p)")})
    assert "struct Holder__hf1 { Params__hf1 p; };" in fused.source
    assert "struct Holder__hf2 { Params__hf2 p; };" in fused.source
    assert "Holder__hf1{p}.p" in fused.source and "Holder__hf2{p}.p" in fused.source
    compile_nvcc(fused.source, workdir=tmp_path)


def test_a_template_both_share_that_names_a_renamed_type_is_refused():
    # a class template is emitted once (hfuse does not copy templates of a shared text per part)
    shared = "template <class T> struct Holder { Params p; T t; };\n"
    a = CLASH_A.read_text().replace("__device__ real apply", shared + "__device__ real apply")
    b = CLASH_B.read_text().replace("__device__ real apply", shared + "__device__ real apply")
    with pytest.raises(HFuseError, match=r"'Holder' is the same in the inputs but names 'Params', which the inputs"):
        fuse([KernelSpec(CLASH_A, "ka", Dim3(128)), KernelSpec(CLASH_B, "kb", Dim3(96))],
             sources={CLASH_A: a.replace("apply(in[i], p)", "apply(in[i], Holder<int>{p, 0}.p)"),
                      CLASH_B: b.replace("apply(in[i], p)", "apply(in[i], Holder<int>{p, 0}.p)")})


@pytest.mark.nvcc
def test_a_type_of_one_input_that_names_its_own_renamed_type_is_renamed_with_it(tmp_path):
    # once refused: "'Row' is the same in the inputs but names 'Vec'": one input's typedef of
    # its own class template, which the other input defines too (an alias template there)
    mine = ("template <class T> struct alignas(16) Vec { T v[4]; };\ntypedef Vec<float> Row;\n"
            "__global__ void rows(Row* r) { r[threadIdx.x].v[0] = 1.f; }\n")
    theirs = ("template <class T, int N> struct Arr { T v[N]; };\ntemplate <class T> using Vec = Arr<T, 2>;\n"
              "__global__ void pairs(Vec<int>* p) { p[threadIdx.x].v[1] = 2; }\n")
    a, b = tmp_path / "mine.cu", tmp_path / "theirs.cu"
    a.write_text(mine)
    b.write_text(theirs)
    fused = fuse([KernelSpec(a, "rows", Dim3(64)), KernelSpec(b, "pairs", Dim3(64))])
    assert "struct alignas(16) Vec__hf1 {" in fused.source and "using Vec__hf2 = Arr<T, 2>;" in fused.source
    assert "typedef Vec__hf1<float> Row__hf1;" in fused.source
    compile_nvcc(fused.source, workdir=tmp_path)


@pytest.mark.nvcc
def test_a_forward_declared_type_another_input_defines_differently_is_one_per_part(tmp_path):
    # once: the first input's 'struct Params;' claimed the name, the other input's different
    # Params was never compared, and both definitions were emitted ("already been defined")
    a, b = tmp_path / "a.cu", tmp_path / "b.cu"
    a.write_text("struct Params;\nstruct Params { int n; float alpha; };\n"
                 "__global__ void ka(float* x, Params p) { x[threadIdx.x] *= p.alpha; }\n")
    b.write_text("struct Params { const float* in; float scale; };\n"
                 "__global__ void kb(float* y, Params p) { y[threadIdx.x] = p.in[threadIdx.x] * p.scale; }\n")
    fused = fuse([KernelSpec(a, "ka", Dim3(64)), KernelSpec(b, "kb", Dim3(64))])
    assert "struct Params__hf1 { int n; float alpha; };" in fused.source
    assert "struct Params__hf2 { const float* in; float scale; };" in fused.source
    compile_nvcc(fused.source, workdir=tmp_path)


@pytest.mark.nvcc
def test_a_template_argument_naming_a_renamed_type_is_renamed_in_the_kernels_parameters_too(tmp_path):
    # once: the body ran for_each<Op__hf2> but the fused kernel took an 'Op hf2_f': undefined
    a, b = tmp_path / "a.cu", tmp_path / "b.cu"
    a.write_text("struct Op { float k; __device__ float operator()(float v) const { return v * k; } };\n"
                 "__global__ void ka(float* x, Op op) { x[threadIdx.x] = op(x[threadIdx.x]); }\n")
    b.write_text("struct Op { int shift; __device__ int operator()(int v) const { return v << shift; } };\n"
                 "template <class F> __global__ void for_each(int* y, F f) { y[threadIdx.x] = f(y[threadIdx.x]); }\n")
    fused = fuse([KernelSpec(a, "ka", Dim3(64)), KernelSpec(b, "for_each", Dim3(64), ("Op",))])
    assert "Op__hf2 hf2_f," in fused.source and "Op__hf1 hf1_op," in fused.source
    compile_nvcc(fused.source, workdir=tmp_path)


@pytest.mark.nvcc
def test_what_another_inputs_definition_of_a_shared_name_calls_is_not_the_parts(tmp_path):
    # once refused: "b's code calls 'rotl', which b.cu does not define": a's own mix calls rotl,
    # b's mix does not, and each part runs its own file's mix
    a, b = tmp_path / "a.cu", tmp_path / "b.cu"
    a.write_text("namespace { __device__ unsigned rotl(unsigned x, int r) { return (x << r) | (x >> (32 - r)); }\n"
                 "__device__ unsigned mix(unsigned h) { return rotl(h ^ (h >> 16), 5); } }\n"
                 "__global__ void hashes(unsigned* h) { h[threadIdx.x] = mix(h[threadIdx.x]); }\n")
    b.write_text("__device__ float mix(float a, float b, float t) { return fmaf(t, b, fmaf(-t, a, a)); }\n"
                 "__global__ void lerps(float* x) { x[threadIdx.x] = mix(x[threadIdx.x], 1.f, 0.25f); }\n")
    fused = fuse([KernelSpec(b, "lerps", Dim3(64)), KernelSpec(a, "hashes", Dim3(64))])
    compile_nvcc(fused.source, workdir=tmp_path)


@pytest.mark.nvcc
def test_recursion_that_reads_nothing_of_the_block_fuses_as_written(tmp_path):
    # once refused ("recursion is not supported"): the helpers are emitted as written, shared
    path = tmp_path / "fib.cu"
    path.write_text("__device__ int fib(int n);\n"
                    "__device__ int fib2(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\n"
                    "__device__ int fib(int n) { return fib2(n); }\n"
                    "__global__ void fibs(int* out, int n) {\n"
                    "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = fib(i % 12);\n}\n")
    fused = fuse([AXPY, KernelSpec(path, "fibs", Dim3(128))])
    assert "__device__ int fib2(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }" in fused.source
    compile_nvcc(fused.source, workdir=tmp_path)


COMPOUND = C.CORPUS / "real_cpp" / "compound.cu"


@pytest.mark.nvrtc
def test_compound_literals_compile_under_nvrtc_in_the_part_and_in_shared_helpers():
    from hfuse.api import device_source
    from toolchain import compile_nvrtc

    fused = fuse([AXPY, KernelSpec(COMPOUND, "literal_kernel", Dim3(128))])
    assert "len2(pt{a[i], 2.0f * a[i]}) + dot_half(vec2{a[i], 1.0f})" in fused.source  # the part's body
    assert "return len2(pt{a.x, a.y}) * 0.5f;" in fused.source  # a helper emitted once for every part
    compile_nvrtc(fused.source, [fused.name_expression])
    original = device_source(KernelSpec(COMPOUND, "literal_kernel", Dim3(128)))
    compile_nvrtc(original.source, [original.name_expression])  # the unfused baseline hfuse tune times


@pytest.mark.nvcc
def test_and_still_under_nvcc(tmp_path):
    compile_nvcc(fuse([AXPY, KernelSpec(COMPOUND, "literal_kernel", Dim3(128))]).source, workdir=tmp_path)


ATTRIBUTES = C.CORPUS / "real_cpp" / "attributes.cu"


@pytest.mark.nvcc
@pytest.mark.parametrize("kernel", ["capped", "three_bounds"])
def test_attributes_of_cuda_12_are_read(kernel, tmp_path):
    # once: "'capped' is a host function" and "'three_bounds' does not parse near '2,'"
    fused = fuse([AXPY, KernelSpec(ATTRIBUTES, kernel, Dim3(256))])
    assert [p.spec.name for p in fused.parts] == ["axpy", kernel]
    assert any("__maxnreg__(64)" in note for note in fused.notes) == (kernel == "capped")
    compile_nvcc(fused.source, workdir=tmp_path)


def test_a_kernel_of_thread_block_clusters_is_refused_at_its_attribute():
    with pytest.raises(HFuseError, match=r"thread block clusters \(__cluster_dims__\(2, 1, 1\)\)") as err:
        fuse([AXPY, KernelSpec(ATTRIBUTES, "cluster_pairs", Dim3(128))])
    assert err.value.where.line == 18 and err.value.where.kernel == "cluster_pairs"


def test_an_instance_with_an_explicit_specialisation_runs_the_specialisation():
    # once: the primary's body, under the instance's name: it compiled and wrote other values
    traits = STYLES / "traits.cu"
    fused = fuse([AXPY, KernelSpec(traits, "fill_pattern", Dim3(128), ("float", "4"))])
    part = fused.source.split("// ---- part 2")[1].split("// ---- fused kernel")[0]
    assert "make_float4(i, -i, 0.5f * i, 2.0f)" in part and "i % 7" not in part
    primary = fuse([AXPY, KernelSpec(traits, "fill_pattern", Dim3(128), ("double",))])
    assert "i % 7" in primary.source.split("// ---- part 2")[1]


NORMS = STYLES / "norms.cu"


def test_constants_only_a_compiler_evaluates_are_asked_of_clang():
    # once: "tiles of Config::kRowTile threads: only warp-sized or smaller tiles (a constant <= 32)"
    spec = KernelSpec(NORMS, "norms::row_sums_configured", Dim3(64), ("norms::RowConfig",))
    fused = fuse([AXPY, spec])
    assert "(tile.meta_group_rank() - 6u)" in fused.source and "4u * 1000.f" in fused.source
    # its __launch_bounds__(Config::kRowTile * Config::kRowsPerBlock) = 64 is checked too
    with pytest.raises(HFuseError, match=r"__launch_bounds__\(Config::kRowTile \* Config::kRowsPerBlock, \.\.\.\) = 64"):
        fuse([AXPY, KernelSpec(NORMS, "norms::row_sums_configured", Dim3(128), ("norms::RowConfig",))])


def test_without_clang_such_a_tile_is_refused_as_before(monkeypatch):
    from hfuse.frontend import clang as clang_module

    monkeypatch.setattr(clang_module, "cindex", lambda: (None, "libclang is not usable here (ImportError: no)"))
    with pytest.raises(HFuseError, match="tiles of kTile threads"):
        fuse([AXPY, KernelSpec(NORMS, "norms::row_max_pow2", Dim3(128))])


SCRATCH = C.CORPUS / "real_cpp" / "shared_scratch.cu"


@pytest.mark.nvcc
@pytest.mark.parametrize("first, second", [("neighbour_diff", "neighbour_sum"), ("neighbour_diff", "neighbour_diff"),
                                           ("reverse_block", "reverse_block"), ("reverse_block", "neighbour_sum")])
def test_static_shared_memory_outside_the_kernel_is_one_per_part(first, second, tmp_path):
    # once: both parts called one swap_neighbours (one scratch array) and wrote one stage[]
    fused = fuse([KernelSpec(SCRATCH, first, Dim3(128)), KernelSpec(SCRATCH, second, Dim3(128))])
    source = fused.source
    if "neighbour" in first:
        assert "__shared__ __align__(16) float scratch[1024]" in source.split("// ---- part 2")[0]
        assert "swap_neighbours__hf1(hf_ctx, " in source and "__device__ float swap_neighbours(" not in source
    if first == second == "reverse_block":
        assert "float stage__hf1[1024]" in source and "float stage__hf2[1024]" in source
        assert "stage[" not in source.replace("hf_smem", "")
    compile_nvcc(source, workdir=tmp_path)


def test_each_parts_copy_of_a_file_scope_shared_variable_is_counted(tmp_path):
    path = tmp_path / "big.cu"
    path.write_text("__shared__ float big[8192];\n"
                    "__global__ void k(float* y) { big[threadIdx.x] = 1.f; __syncthreads(); y[threadIdx.x] = big[0]; }\n")
    with pytest.raises(HFuseError, match=r"static shared memory adds up to 65536 bytes \(k: 32768 B, k: 32768 B\)"):
        fuse([KernelSpec(path, "k", Dim3(128)), KernelSpec(path, "k", Dim3(128))])


def test_one_file_read_with_two_sets_of_flags_is_refused(tmp_path):
    # once: both parts got the first kernel's macros (SCALE = 2 for both), with no word said
    from hfuse.frontend.options import CompileOptions

    path = tmp_path / "scaled.cu"
    path.write_text("#ifndef SCALE\n#define SCALE 1.0f\n#endif\n__device__ float scaled(float v) { return v * SCALE; }\n"
                    "__global__ void k(float* x) { x[threadIdx.x] = scaled(x[threadIdx.x]); }\n")
    two, three = (CompileOptions.from_flags(defines=[f"SCALE={v}.0f"]) for v in (2, 3))
    with pytest.raises(HFuseError, match=r"read for 'k' with .*-DSCALE=2\.0f and for 'k' with .*-DSCALE=3\.0f"):
        fuse([KernelSpec(path, "k", Dim3(128), options=two), KernelSpec(path, "k", Dim3(128), options=three)])
    fused = fuse([KernelSpec(path, "k", Dim3(128), options=two), KernelSpec(path, "k", Dim3(128), options=two)])
    assert "v * 2.0f" in fused.source


LIBRARY_MACROS = C.CORPUS / "real_cpp" / "library_macros.cu"
SYSINCLUDE = C.CORPUS / "real_cpp" / "sysinclude"


def _library_options():
    from hfuse.frontend.options import CompileOptions

    return CompileOptions.from_flags(system_include_dirs=[str(SYSINCLUDE)])


@pytest.mark.nvcc
@pytest.mark.parametrize("kernel, block", [("scale_loop", 256), ("offset_by_index", 128), ("reverse_tiles", 128)])
def test_an_installed_librarys_macros_that_are_syntax_are_expanded(kernel, block, tmp_path):
    fused = fuse([AXPY, KernelSpec(LIBRARY_MACROS, kernel, Dim3(block))], options=_library_options())
    part = fused.source.split("// ---- part 2")[1].split("// ---- fused kernel")[0]
    assert "threadIdx" not in part.replace("hf_ctx.threadIdx", "")  # every read of the block is the part's
    assert "FAKELIB_GLOBAL_TID" not in part and "FAKELIB_KERNEL_LOOP" not in part
    assert "#include <fakelib/macros.h>" in fused.source  # the header stays the library's
    if kernel == "offset_by_index":
        assert "FAKELIB_WARP_SIZE" in part  # a value keeps its spelling
    compile_nvcc(fused.source, flags=["-isystem", str(SYSINCLUDE)], workdir=tmp_path)


@pytest.mark.nvrtc
@pytest.mark.parametrize("kernel", ["scale_loop", "offset_by_index", "reverse_tiles"])
def test_and_under_nvrtc_fused_and_alone(kernel):
    # the value macros they use are defined for NVRTC, which does not read the library's header
    # (a function of that header, fakelib::squared, NVRTC could not have: none is called here)
    from hfuse.api import device_source
    from toolchain import compile_nvrtc

    spec = KernelSpec(LIBRARY_MACROS, kernel, Dim3(128), options=_library_options())
    fused = fuse([AXPY, spec], options=_library_options())
    compile_nvrtc(fused.source, [fused.name_expression], flags=[f"-I{SYSINCLUDE}"])
    original = device_source(spec)
    compile_nvrtc(original.source, [original.name_expression], flags=[f"-I{SYSINCLUDE}"])


LIBRARY_NAMES = C.CORPUS / "real_cpp" / "library_names.cu"


@pytest.mark.nvcc
def test_names_an_installed_library_gives_through_its_macros_are_read_as_it_means_them(tmp_path):
    fused = fuse([AXPY, KernelSpec(LIBRARY_NAMES, "kernels::warp_sums", Dim3(128))], options=_library_options())
    part = fused.source.split("// ---- part 2")[1].split("// ---- fused kernel")[0]
    assert "namespace wcub = cub;" in part  # a macro naming a namespace is expanded, or nothing parses
    assert "FAKELIB_UNLIKELY(i >= n)" in part  # a builtin's value keeps its spelling
    assert "FAKELIB_SHFL_XOR(v, m)" in part  # Clang: a function template of the header, which reads nothing
    assert fused.layout.name == "horizontal"
    compile_nvcc(fused.source, flags=["-isystem", str(SYSINCLUDE)], workdir=tmp_path)


def test_a_function_spelt_like_a_macro_that_reads_the_block_keeps_its_block_whole():
    # FAKELIB_LANE_SUM reads threadIdx: taken for a macro nobody defined before, now Clang's finding
    fused = fuse([AXPY, KernelSpec(LIBRARY_NAMES, "kernels::lane_sums", Dim3(128))], options=_library_options())
    assert fused.layout.name == "interblock" and "FAKELIB_LANE_SUM" in fused.notes[0]


def test_a_condition_on_a_file_macro_whose_value_is_a_librarys_is_decided_by_the_librarys():
    # #if HAS_FAST_PATH() with HAS_FAST_PATH() FAKELIB_HAS_FAST_PATH() (FAKELIB_API_LEVEL >= 2):
    # once read as 0, and the kernel was not there ("no __global__ kernel named 'fast_path'")
    fused = fuse([AXPY, KernelSpec(LIBRARY_NAMES, "kernels::fast_path", Dim3(128))], options=_library_options())
    assert "x[i] *= 2.f;" in fused.source


def test_a_launch_bound_written_with_a_librarys_macro_is_checked():
    with pytest.raises(HFuseError, match=r"block 512 has 512 threads but the kernel declares __launch_bounds__\("):
        fuse([AXPY, KernelSpec(LIBRARY_MACROS, "scale_loop", Dim3(512))], options=_library_options())


TRAITS = "template <typename T> struct Traits { static constexpr int v = 0; };\n"
SPECIALISED = TRAITS + "template <> struct Traits<float> { static constexpr int v = 1; };\n"
USE_TRAITS = "__global__ void k{n}(float* x) {{ x[threadIdx.x] = Traits<float>::v + {n}; }}\n"
CAST = "template <typename T> __device__ float cast(T v) { return static_cast<float>(v); }\n"
OVERLOADS = "__device__ float twice(float v) { return 2.f * v; }\n"


OUTSIDE = ("template <> struct Traits<{t}> {{ static constexpr int v = {v}; __device__ int get() const; }};\n"
           "__device__ int Traits<{t}>::get() const {{ return v; }}\n")


def test_inputs_that_disagree_on_a_family_hfuse_cannot_copy_are_refused(tmp_path):
    # a class template's family with a member written outside a class: no copy per part.
    # Once, the second file's kernel saw the first file's specialisation and read
    # Traits<float>::v = 1 where, compiled alone, it read 0
    a, b = tmp_path / "a.cu", tmp_path / "b.cu"
    a.write_text(TRAITS + OUTSIDE.format(t="float", v=1) + USE_TRAITS.format(n=1))
    b.write_text(TRAITS + USE_TRAITS.format(n=2))
    with pytest.raises(HFuseError, match=r"defines 'Traits' once more .* and [ab]\.cu, whose kernel 'k[12]' uses 'Traits'"):
        fuse([KernelSpec(a, "k1", Dim3(128)), KernelSpec(b, "k2", Dim3(128))])


def test_every_input_that_lacks_a_specialisation_is_checked(tmp_path):
    # a.cu specialises Traits<float>, b.cu Traits<double>; only b.cu's kernel uses Traits<float>:
    # once, only a.cu's lack was looked at (its kernel does not use the name) and b.cu's was not
    a, b = tmp_path / "a.cu", tmp_path / "b.cu"
    a.write_text(TRAITS + OUTSIDE.format(t="float", v=1) + "__global__ void k1(float* x) { x[threadIdx.x] = 1.f; }\n")
    b.write_text(TRAITS + OUTSIDE.format(t="double", v=2) + "__global__ void k2(float* x) { x[threadIdx.x] = Traits<float>::v; }\n")
    with pytest.raises(HFuseError, match=r"defines 'Traits' once more \(template <> struct Traits<float>"):
        fuse([KernelSpec(a, "k1", Dim3(128)), KernelSpec(b, "k2", Dim3(128))])


@pytest.mark.nvcc
@pytest.mark.parametrize("first, second, values", [
    (SPECIALISED, TRAITS, (1, 0)),  # a class template's explicit specialisation one file has
    (SPECIALISED, SPECIALISED.replace("v = 1", "v = 2"), (1, 2)),
    ("template <typename T> struct Traits;\ntemplate <> struct Traits<float> { static constexpr int v = 5; };\n",
     TRAITS + "template <> struct Traits<float*> { static constexpr int v = 9; };\n", (5, 0)),
])
def test_inputs_that_disagree_on_a_class_templates_family_get_a_family_each(tmp_path, first, second, values):
    # once refused: compiled apart, each file's Traits<float> chose among its own file's
    # specialisations, and so does each part's copy
    a, b = tmp_path / "a.cu", tmp_path / "b.cu"
    a.write_text(first + USE_TRAITS.format(n=1))
    b.write_text(second + USE_TRAITS.format(n=2))
    fused = fuse([KernelSpec(a, "k1", Dim3(128)), KernelSpec(b, "k2", Dim3(128))])
    assert "Traits__hf1<float>::v + 1" in fused.source and "Traits__hf2<float>::v + 2" in fused.source
    meaning = (f"\nstatic_assert(Traits__hf1<float>::v == {values[0]} && Traits__hf2<float>::v == {values[1]}, "
               "\"each part's own family\");\n")
    compile_nvcc(fused.source + meaning, workdir=tmp_path)


@pytest.mark.nvcc
@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_inputs_that_disagree_on_a_function_templates_specialisations_get_a_set_each(tmp_path, order):
    # once refused: a.cu's cast<int> returns 7, b.cu has the primary template alone
    paths = [tmp_path / "a.cu", tmp_path / "b.cu"]
    paths[0].write_text(CAST + "template <> __device__ float cast<int>(int v) { return 7.f; }\n"
                        "template <typename T> __global__ void k1(float* x) { x[threadIdx.x] = cast<T>(T(1)) + cast(3); }\n")
    paths[1].write_text(CAST + "__global__ void k2(float* x) { x[threadIdx.x] = cast<int>(2) + cast(1.f); }\n")
    specs = [KernelSpec(paths[0], "k1", Dim3(128), ("int",)), KernelSpec(paths[1], "k2", Dim3(128))]
    fused = fuse([specs[i] for i in order])
    one, two = order.index(0) + 1, order.index(1) + 1
    assert f"template <> __device__ float cast__hf{one}<int>(" in fused.source
    assert f"cast__hf{two}<int>(" in fused.source and f"float cast__hf{two}<int>(" not in fused.source
    compile_nvcc(fused.source, workdir=tmp_path)


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_inputs_with_more_overloads_than_another_give_each_part_its_own_set(tmp_path, order):
    # compiled apart, k1 chose among twice(float) and twice(double), k2 had twice(float) alone
    sources = [OVERLOADS + "__device__ double twice(double v) { return 3.0 * v; }\n", OVERLOADS]
    paths = [tmp_path / "a.cu", tmp_path / "b.cu"]
    for n, (path, text) in enumerate(zip(paths, sources), 1):
        path.write_text(text + f"__global__ void k{n}(float* x) {{ x[threadIdx.x] = twice({n}.0) + twice({n}.f); }}\n")
    specs = [KernelSpec(paths[i], f"k{i + 1}", Dim3(128)) for i in order]
    fused = fuse(specs)
    parts = {p.spec.name: fused.source.split(f"// ---- part {p.index}:")[1].split("// ---- ")[0] for p in fused.parts}
    assert "double twice__hf" in parts["k1"] and "float twice__hf" in parts["k1"]
    assert "double twice__hf" not in parts["k2"] and "float twice__hf" in parts["k2"]


def test_inputs_that_agree_or_do_not_use_the_name_fuse(tmp_path):
    a, b, c = tmp_path / "a.cu", tmp_path / "b.cu", tmp_path / "c.cu"
    a.write_text(SPECIALISED + USE_TRAITS.format(n=1))
    b.write_text(SPECIALISED + USE_TRAITS.format(n=2))  # the same definitions
    c.write_text(TRAITS + "__global__ void k3(float* x) { x[threadIdx.x] = 3.f; }\n")  # defines, never uses
    fuse([KernelSpec(a, "k1", Dim3(128)), KernelSpec(b, "k2", Dim3(128))])
    fuse([KernelSpec(a, "k1", Dim3(128)), KernelSpec(c, "k3", Dim3(128))])


def test_a_device_function_defined_in_a_file_hfuse_was_not_given_is_refused(tmp_path):
    # separate compilation (-rdc): its body may read threadIdx or synchronise; once fused silently
    path = tmp_path / "declared.cu"
    path.write_text("extern __device__ float lane_weight(float v);\n__device__ float later(float v);\n"
                    "__global__ void k(float* x) {\n  x[threadIdx.x] = lane_weight(x[threadIdx.x]) + later(1.f);\n}\n"
                    "__device__ float later(float v) { return 2.f * v; }\n")
    with pytest.raises(HFuseError, match="'lane_weight' is declared but no input defines it") as err:
        fuse([AXPY, KernelSpec(path, "k", Dim3(128))])
    assert err.value.where.line == 4
    path.write_text(path.read_text().replace("lane_weight(x[threadIdx.x])", "x[threadIdx.x]"))
    fuse([AXPY, KernelSpec(path, "k", Dim3(128))])  # a prototype of a function defined below is no such case


@pytest.mark.nvrtc
@pytest.mark.parametrize("args, body", [(("float", "4"), "make_float4(i, -i, 0.5f * i, 2.0f)"), (("int",), "out[i] = -i;"),
                                        (("double",), "i % 7")])
def test_the_unfused_instance_compiles_with_its_specialisation(args, body):
    # what hfuse tune compiles as the original: once it stopped at the specialisation (StopIteration)
    from hfuse.api import device_source
    from toolchain import compile_nvrtc

    original = device_source(KernelSpec(STYLES / "traits.cu", "fill_pattern", Dim3(128), args))
    assert body in original.source
    compile_nvrtc(original.source, [original.name_expression])


def test_a_short_name_the_kernel_only_contains_is_no_use(tmp_path):
    # 'max' overloads one file has: a kernel calling fmaxf does not use them
    a, b = tmp_path / "a.cu", tmp_path / "b.cu"
    overloads = "__device__ float max(float a, float b) { return a > b ? a : b; }\n"
    a.write_text(overloads + "__device__ double max(double a, double b) { return a > b ? a : b; }\n"
                 "__global__ void k1(float* x) { x[threadIdx.x] = max(x[threadIdx.x], 0.f); }\n")
    b.write_text(overloads + "__global__ void k2(float* x) { x[threadIdx.x] = fmaxf(x[threadIdx.x], 1.f); }\n")
    fuse([KernelSpec(a, "k1", Dim3(128)), KernelSpec(b, "k2", Dim3(128))])


@pytest.mark.nvcc
def test_an_installed_librarys_pragma_macro_is_a_pragma_in_the_fused_file(tmp_path):
    # CUTLASS_PRAGMA_UNROLL's shape: _Pragma("unroll") behind a library macro did not parse
    from hfuse.frontend.options import CompileOptions

    library = tmp_path / "include" / "lib"
    library.mkdir(parents=True)
    (library / "cfg.h").write_text('#pragma once\n#define LIB_PRAGMA_UNROLL _Pragma("unroll")\n'
                                   '#define LIB_PRAGMA_NO_UNROLL _Pragma("unroll 1")\n')
    source = tmp_path / "k.cu"
    source.write_text("#include <lib/cfg.h>\n__global__ void k(float* y) {\n  float acc = 0.f;\n  LIB_PRAGMA_UNROLL\n"
                      "  for (int i = 0; i < 16; ++i) acc += y[i * blockDim.x + threadIdx.x];\n"
                      "  LIB_PRAGMA_NO_UNROLL for (int i = 0; i < 8; ++i) acc *= 1.01f;\n  y[threadIdx.x] = acc;\n}\n")
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "include")])
    fused = fuse([AXPY, KernelSpec(source, "k", Dim3(128), options=options)], options=options)
    part = fused.source[fused.source.index("---- part 2"):]
    assert "#pragma unroll\n" in part and "#pragma unroll 1\n" in part and "LIB_PRAGMA" not in part
    compile_nvcc(fused.source, flags=["-isystem", str(tmp_path / "include")], workdir=tmp_path)


CONCEPTS = """
#include <type_traits>
template <typename T>
concept Floaty = std::is_floating_point_v<T>;
template <Floaty T>
__device__ T twice(T v) { return v + v; }
template <typename T> requires Floaty<T>
__global__ void scale(T* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = twice(y[i]);
}
"""


@pytest.mark.nvcc
def test_a_cpp20_kernel_with_a_requires_clause_and_its_concept(tmp_path):
    # once: the requires-clause hid the kernel ("no __global__ kernel named 'scale'"), and the
    # concept, which declared no name hfuse knew, was left out
    from hfuse.frontend.options import CompileOptions
    from hfuse.runtime.ptxas import nvcc_resources

    options = CompileOptions(std="c++20")
    fused = fuse([AXPY, KernelSpec("k.cu", "scale", Dim3(128), ("float",))], sources={"k.cu": CONCEPTS},
                 options=options)
    assert "template <typename T> requires Floaty<T>\n__device__ __forceinline__ void scale__hf2(" in fused.source
    assert "concept Floaty = std::is_floating_point_v<T>;" in fused.source
    assert fused.name in nvcc_resources(fused.source, std=options.emitted_std)


USING_DECLARATIONS = """
namespace detail {
__device__ __forceinline__ int lanes() { return threadIdx.x & 31; }
__device__ __forceinline__ int twice(int x) { return 2 * x; }
}
using detail::lanes;
using detail::twice;
namespace ops {
using detail::lanes;
__device__ int shifted(int x) { return lanes() + x; }
}
__global__ void brought(int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = lanes() + twice(i) + ops::shifted(i);
}
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""


@pytest.mark.nvcc
def test_names_a_namespace_scope_using_declaration_brings_in(tmp_path):
    # once: 'lanes' of 'using detail::lanes;' was not found (the analysis missed that it reads
    # threadIdx, the closure left 'twice' out): nvcc failed. Each part now has its own
    # using-declaration of its copy, and the original one is not emitted with the original.
    specs = [KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "brought", Dim3(128))]
    source = fuse(specs, sources={"k.cu": USING_DECLARATIONS}).source
    assert "lanes__hf2(hf_ctx) + twice(i) + ops::shifted__hf2(hf_ctx, i)" in source
    assert "return lanes__hf2(hf_ctx) + x;" in source
    assert source.count("using detail::lanes__hf2;") == 2 and "using detail::lanes;" not in source
    assert "using detail::twice;" in source
    compile_nvcc(source, workdir=tmp_path)


def test_a_free_operator_that_reads_the_block_is_refused_at_its_line():
    # once: the operator, needing the part's view of the block, was left out (nvcc: no
    # operator matches); no call of an operator can pass that view
    source = """struct F { float x; };
__device__ __forceinline__ F operator+(F a, F b) { return F{a.x + b.x}; }
__device__ __forceinline__ float operator*(F a, float b) { return a.x * b + threadIdx.x; }
__global__ void k_op(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  F f{1.f};
  if (i < n) out[i] = (f + f) * 2.f;
}
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""
    specs = [KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "k_op", Dim3(128))]
    for layout in ("horizontal", "interblock"):
        with pytest.raises(HFuseError, match=r"'operator\*' reads the block") as caught:
            fuse(specs, sources={"k.cu": source}, layout=layout)
        assert caught.value.where.line == 3
    assert "operator+" in fuse(specs, sources={"k.cu": source.replace(" + threadIdx.x", "")}).source


TMA = """#include <cuda.h>
__global__ void k_tma(const __grid_constant__ CUtensorMap tmap, float* out) {
  if (threadIdx.x == 0) asm volatile("prefetch.tensormap [%0];" :: "l"(&tmap) : "memory");
  out[blockIdx.x * 128 + threadIdx.x] = 1.f;
}
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""


@pytest.mark.nvcc
def test_a_grid_constant_tensor_map_keeps_its_address_in_the_parameter_space(tmp_path):
    # once: the part took the descriptor by value (TMA would get the address of a copy in
    # local memory) and cuda.h, which declares it, was dropped as a host header (nvcc failed)
    from toolchain import compile_nvrtc

    specs = [KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "k_tma", Dim3(128))]
    fused = fuse(specs, sources={"k.cu": TMA})
    assert "k_tma__hf2(const CUtensorMap& tmap, float* out, const hfuse_ctx& hf_ctx)" in fused.source
    assert "const __grid_constant__ CUtensorMap hf2_tmap" in fused.source
    compile_nvcc(fused.source, workdir=tmp_path)
    compile_nvrtc(fused.source, [fused.name])


INLINE_NAMESPACE = """
namespace lib::detail {
__device__ __forceinline__ int lane() { return threadIdx.x & 31; }
}
namespace lib {
inline namespace v2 {
__device__ __forceinline__ int warp() { return threadIdx.x >> 5; }
template <class T> struct Pair { T a, b; };
}
}
__global__ void versioned(int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  lib::Pair<int> p{1, 2};
  if (i < n) out[i] = lib::detail::lane() + lib::warp() * 100 + p.a + lib::v2::warp();
}
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""


@pytest.mark.nvcc
def test_a_librarys_inline_namespace(tmp_path):
    # once: lib::warp() (lib::v2::warp) was not found, so its read of threadIdx was not seen,
    # and v2 was emitted without 'inline' (lib::Pair undefined): nvcc failed
    specs = [KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "versioned", Dim3(128))]
    source = fuse(specs, sources={"k.cu": INLINE_NAMESPACE}).source
    assert "lib::warp__hf2(hf_ctx) * 100 + p.a + lib::v2::warp__hf2(hf_ctx)" in source
    assert source.count("inline namespace v2 {") == 2  # the shared Pair, the part's warp
    compile_nvcc(source, workdir=tmp_path)


def test_line_comments_come_back_as_the_user_wrote_them():
    # once: every '// index' of a fused body read '/* index */'
    source = """__global__ void commented(int* out, int n) {
  // leading comment
  int i = blockIdx.x * blockDim.x + threadIdx.x;  // index
  if (i < n) out[i] = i;  /* block comment */
}
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""
    fused = fuse([KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "commented", Dim3(128))],
                 sources={"k.cu": source}).source
    assert "  // leading comment\n" in fused and "hf_ctx.threadIdx.x;  // index\n" in fused
    assert "out[i] = i;  /* block comment */" in fused and "/*//" not in fused


def _needs_cpp20(tmp_path):
    # PyTorch's ATen and torch/all.h, from 2.10 or so: '#error C++20 or later compatible
    # compiler is required'. Read as nvcc's default C++17, hfuse went on with Clang's reading
    # lost (a note), and nvcc failed on the fused file with the same #error
    from hfuse.frontend.options import CompileOptions

    library = tmp_path / "include" / "lib"
    library.mkdir(parents=True)
    (library / "all.h").write_text("#pragma once\n#if __cplusplus < 202002L\n"
                                   "#error C++20 or later compatible compiler is required to use lib.\n#endif\n"
                                   "namespace lib { __device__ inline float twice(float v) { return 2.f * v; } }\n")
    source = tmp_path / "k.cu"
    source.write_text("#include <lib/all.h>\n__global__ void k(float* y) { y[threadIdx.x] = lib::twice(y[threadIdx.x]); }\n")
    return source, lambda std=None: CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "include")], std=std)


def test_a_kept_header_that_requires_a_later_standard_says_which(tmp_path):
    pytest.importorskip("clang.cindex", reason="libclang (the libclang-ng wheel) is not installed")
    source, options = _needs_cpp20(tmp_path)
    with pytest.raises(HFuseError, match=r"a header this file keeps requires C\+\+20 \(.*all.h:3: C\+\+20 or later") \
            as err:
        fuse([AXPY, KernelSpec(source, "k", Dim3(128))], options=options())
    assert err.value.where.file == source and "-std c++20" in err.value.hint


@pytest.mark.nvcc
def test_with_that_standard_it_fuses_and_compiles(tmp_path):
    source, options = _needs_cpp20(tmp_path)
    fused = fuse([AXPY, KernelSpec(source, "k", Dim3(128))], options=options("c++20"))
    assert "-std=c++20" in fused.source[:2000]
    compile_nvcc(fused.source, flags=["-std=c++20", "-isystem", str(tmp_path / "include")], workdir=tmp_path)


BLOCK_SIZE_HEADER = """#pragma once
namespace lib2 {
struct Block1D {
  static __device__ int Tid() { return threadIdx.x; }
  static __device__ int Warps() { return blockDim.x / 32; }
};
template <typename T, typename B = Block1D>
__device__ T block_sum(T v, T* shared) {
  const int tid = B::Tid();
  if (tid % 32 == 0) shared[tid / 32] = v;
  __syncthreads();
  T s = 0;
  for (int i = 0; i < B::Warps(); ++i) s += shared[i];
  __syncthreads();
  return s;
}
}
"""


def _reads_block_size(tmp_path):
    from hfuse.frontend.options import CompileOptions

    (tmp_path / "inc" / "lib").mkdir(parents=True)
    (tmp_path / "inc" / "lib" / "red2.cuh").write_text(BLOCK_SIZE_HEADER)
    source = tmp_path / "k.cu"
    source.write_text("#include <lib/red2.cuh>\ntemplate <typename T>\n__global__ void k(T* out, const T* in) {\n"
                      "  __shared__ T sh[32];\n  T v = lib2::block_sum<T>(in[blockIdx.x * blockDim.x + threadIdx.x], sh);\n"
                      "  if (threadIdx.x == 0) out[blockIdx.x] = v;\n}\n")
    return source, CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")])


@pytest.mark.nvcc
def test_a_kept_header_counting_the_block_runs_alone_in_a_block_of_its_own_size(tmp_path):
    # PyTorch's BlockReduceSum<T, B = Block1D> (ATen/native/cuda/block_reduce.cuh) counts its warps
    # by blockDim.x through B::Warps(): once fused horizontally (nothing found in the template),
    # now read in the instance: inter-block, where the fused block is the largest part's
    pytest.importorskip("clang.cindex", reason="libclang (the libclang-ng wheel) is not installed")
    source, options = _reads_block_size(tmp_path)
    fused = fuse([KernelSpec(source, "k", Dim3(256), ("float",)), AXPY], options=options)
    assert fused.layout.name == "interblock" and "reads blockDim" in " ".join(fused.notes)
    compile_nvcc(fused.source, flags=["-isystem", str(tmp_path / "inc")], workdir=tmp_path)
    with pytest.raises(HFuseError, match=r"the header counts the fused block, 512 threads, which is not the "
                                         r"kernel's own block of 256"):
        fuse([KernelSpec(source, "k", Dim3(256), ("float",)), replace(AXPY, block=Dim3(512))], options=options)
    with pytest.raises(HFuseError, match=r"'lib2::block_sum' .* reads blockDim"):
        fuse([KernelSpec(source, "k", Dim3(256), ("float",)), AXPY], options=options, layout="horizontal")


NESTED_NAMESPACES = """
namespace lib { template <typename T> struct Acc { T* data; int n; }; }
namespace lib { namespace ops {
struct Scale { float by; };
__global__ void scale(Acc<float> x, Scale s) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < x.n) x.data[i] *= s.by;
}
} }
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""


@pytest.mark.nvcc
def test_a_kernels_parameter_types_named_as_its_enclosing_namespace_sees_them(tmp_path):
    # Acc of lib, taken by a kernel of lib::ops (ATen's GenericPackedTensorAccessor of at, by
    # at::native's batch norm): once 'identifier "Acc" is undefined' in the fused signature
    specs = [KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "lib::ops::scale", Dim3(128))]
    source = fuse(specs, sources={"k.cu": NESTED_NAMESPACES}).source
    assert "using namespace ::lib;\nusing namespace ::lib::ops;" in source
    compile_nvcc(source, workdir=tmp_path)


WRITTEN_ODDLY = """
template <typename T> struct Pair {
  T a, b;
  __device__ Pair(T x, T y) : a(x), b(y) {}
  __host__ __device__
  friend Pair operator+(Pair p, const Pair& q) { return Pair(p.a + q.a, p.b + q.b); }
};
__global__ void odd(const unsigned* in, float* out, unsigned n) {
  alignas(sizeof(double)) extern __shared__ char scratch[];
  float* s = reinterpret_cast<float*>(scratch);
  for (auto i = decltype(n){0}; i < n; i += blockDim.x) {
    Pair<float> p = Pair<float>(in[i], 1.f) + Pair<float>(2.f, 3.f);
    s[threadIdx.x] = p.a * p.b;
    __syncthreads();
    out[i] = s[(threadIdx.x + 1) % blockDim.x];
    __syncthreads();
  }
}
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""


@pytest.mark.nvcc
def test_forms_the_grammar_lacks_are_read_and_kept_as_written(tmp_path):
    # (ATen's Normalization.cuh, ScanUtils.cuh) a hidden friend with its attributes before
    # 'friend', a braced cast to decltype(n), an alignment before extern __shared__: once
    # "does not parse", and (the last) a cast to 'alignas(...) char*' nvcc rejected
    specs = [KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", "odd", Dim3(128))]
    fused = fuse(specs, sources={"k.cu": WRITTEN_ODDLY})
    assert "for (auto i = decltype(n){0}; i < n; i += hf_ctx.blockDim.x)" in fused.source
    assert "char (&scratch)[] = *reinterpret_cast<char (*)[]>(hf_ctx.dyn_smem);" in fused.source
    assert "  __host__ __device__\n  friend Pair operator+" in fused.source
    odd = next(p.kernel for p in fused.parts if p.spec.name == "odd")
    assert odd.line == WRITTEN_ODDLY.splitlines().index(
        "__global__ void odd(const unsigned* in, float* out, unsigned n) {") + 1  # (the friend's line break kept)
    compile_nvcc(fused.source, workdir=tmp_path)


OVERLOADED_BY_PARAMETERS = """
template <typename T> __global__ void fill(T* x, int n) { if (threadIdx.x < n) x[threadIdx.x] = T(1); }
template <typename T> __global__ void fill(T* x, T v, int n) { if (threadIdx.x < n) x[threadIdx.x] = v; }
__global__ void other(float* y) { y[threadIdx.x] = 1.f; }
"""


def test_kernel_templates_that_differ_only_in_their_parameters_are_refused_with_why():
    with pytest.raises(HFuseError, match=r"names 2 kernel templates \(lines 2, 3\) that all take 'fill<float>': they "
                                         r"differ in their parameters") as err:
        fuse([KernelSpec("k.cu", "fill", Dim3(128), ("float",)), KernelSpec("k.cu", "other", Dim3(96))],
             sources={"k.cu": OVERLOADED_BY_PARAMETERS})
    assert "-k 'fill<float>@2:BLOCK'" in err.value.hint


@pytest.mark.nvcc
@pytest.mark.parametrize("line, body", [(2, "= T(1);"), (3, "= v;")])
def test_the_line_of_its_definition_picks_one_of_kernels_that_differ_in_their_parameters(tmp_path, line, body):
    # PyTorch's batch_norm_backward_elemt_kernel is two such templates; before, only renaming one helped
    fused = fuse([KernelSpec("k.cu", "fill", Dim3(128), ("float",), line=line), KernelSpec("k.cu", "other", Dim3(96))],
                 sources={"k.cu": OVERLOADED_BY_PARAMETERS})
    part = fused.source[fused.source.index("// ---- part 1"):fused.source.index("// ---- part 2")]
    assert body in part and part.count("fill__hf1(") == 1
    compile_nvcc(fused.source, workdir=tmp_path)


def test_a_line_where_no_kernel_of_the_name_is_defined_says_where_they_are():
    with pytest.raises(HFuseError, match=r"no kernel named 'fill' is defined at line 4 of k.cu \(kernels of that "
                                         r"name start at lines: 2, 3\)"):
        fuse([KernelSpec("k.cu", "fill", Dim3(128), ("float",), line=4), KernelSpec("k.cu", "other", Dim3(96))],
             sources={"k.cu": OVERLOADED_BY_PARAMETERS})


def test_a_two_dimensional_kernel_whose_header_counts_its_block_is_told_to_stay_unfused(tmp_path):
    # ATen's batch norm backward: a 32x16 block and BlockReduce<..., Block2D>; a 1-D block is no option
    pytest.importorskip("clang.cindex", reason="libclang (the libclang-ng wheel) is not installed")
    source, options = _reads_block_size(tmp_path)
    with pytest.raises(HFuseError, match=r"not the kernel's own block of 32x8") as err:
        fuse([KernelSpec(source, "k", Dim3(32, 8), ("float",)), AXPY], options=options)
    assert err.value.hint.startswith("keep it unfused: these layouts launch a 1-D fused block")


USING_A_LIBRARYS_NAMESPACE = """
#include <fakelib/macros.h>
#include <chrono>
using namespace fakelib;
using namespace std::chrono;
__global__ void squares(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = squared(x[i]);
}
"""


@pytest.mark.nvcc
@pytest.mark.nvrtc
def test_using_namespace_of_a_kept_librarys_header_stays(tmp_path):
    # once dropped (hfuse reads no namespace of a kept header): 'squared' undefined, as
    # 'Tensor' and 'make_tensor' were after CuTe's 'using namespace cute;'
    from toolchain import compile_nvrtc

    fused = fuse([AXPY, KernelSpec("k.cu", "squares", Dim3(128))], sources={"k.cu": USING_A_LIBRARYS_NAMESPACE},
                 options=_library_options())
    assert "\nusing namespace fakelib;\n" in fused.source
    assert "std::chrono" not in fused.source  # a host header's namespace: <chrono> is dropped
    # declared empty first: valid whether or not the kept headers bring it (NVRTC: they may not)
    assert fused.source.index("namespace fakelib {") < fused.source.index("using namespace fakelib;")
    compile_nvcc(fused.source, flags=["-isystem", str(SYSINCLUDE)], workdir=tmp_path)
    compile_nvrtc(fused.source, [fused.name_expression], flags=[f"-I{SYSINCLUDE}"])


VENDORED_HEADER = """#pragma once
namespace vlib {
// a library's own C++, which hfuse need not read as the user's: kept as an #include
template <typename T, int N> struct alignas(sizeof(T) * N) Vec { T v[N]; };
template <typename T> __device__ inline T twice(T x) { return x + x; }
}  // namespace vlib
"""

VENDORED_USER = """#include <vlib/vec.h>
__global__ void doubled(float* y, const float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = vlib::twice(x[i]);
}
"""


@pytest.mark.nvcc
def test_an_include_folder_under_third_party_is_a_librarys_and_stays_an_include(tmp_path):
    # CUTLASS given with -I from third_party/: read as the user's own, CuTe's headers took
    # 15-25 s to preprocess and then failed on its C++ (tuple.hpp: "cannot find the function's declarator")
    from hfuse.frontend.options import CompileOptions

    library = tmp_path / "third_party" / "vlib" / "include"
    (library / "vlib").mkdir(parents=True)
    (library / "vlib" / "vec.h").write_text(VENDORED_HEADER)
    (tmp_path / "csrc").mkdir()
    (tmp_path / "csrc" / "k.cu").write_text(VENDORED_USER)
    options = CompileOptions.from_flags(include_dirs=[str(library)])
    fused = fuse([AXPY, KernelSpec(tmp_path / "csrc" / "k.cu", "doubled", Dim3(128))], options=options)
    assert "#include <vlib/vec.h>" in fused.source and "struct alignas" not in fused.source
    compile_nvcc(fused.source, flags=[f"-I{library}"], workdir=tmp_path)


def test_an_error_in_a_header_of_an_include_folder_says_it_may_be_a_librarys(tmp_path):
    from hfuse.frontend.options import CompileOptions

    library = tmp_path / "libs" / "include"
    (library / "vlib").mkdir(parents=True)
    (library / "vlib" / "vec.h").write_text("#pragma once\n#error this library needs its own build\n")
    (tmp_path / "k.cu").write_text(VENDORED_USER)
    options = CompileOptions.from_flags(include_dirs=[str(library)])
    with pytest.raises(HFuseError, match=rf"vec.h is reached through -I {library}.*give it as -isystem {library}"):
        fuse([AXPY, KernelSpec(tmp_path / "k.cu", "doubled", Dim3(128))], options=options)


DECLARED_KERNEL = """template <typename T>
__global__ void lookup(T* out, const int* ids, int n);

template <>
__global__ void lookup<float>(float* out, const int* ids, int n) {
  for (uint i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) out[i] = float(ids[i]);
}
"""


@pytest.mark.nvrtc
def test_what_an_explicit_specialisations_body_names_reaches_the_fused_files_nvrtc_stand_ins(tmp_path):
    # LightSeq declares its kernel templates and defines each instance as an explicit
    # specialisation; the fused file's stand-ins for nvcc's implicit headers (uint here) were
    # chosen from the names of the template's declaration, not of the specialisation's body
    (tmp_path / "lookup.cu").write_text(DECLARED_KERNEL)
    fused = fuse([AXPY, KernelSpec(tmp_path / "lookup.cu", "lookup", Dim3(128), ("float",))])
    assert "typedef unsigned int uint;" in fused.source
    compile_nvrtc(fused.source, [fused.name_expression])


ISYSTEM_KERNELS = """#pragma once
namespace mylib { namespace norm {
template <int VEC, typename T>
__global__ __launch_bounds__(256) void
    RMSNormKernel(T* out, const T* in) { out[threadIdx.x] = in[threadIdx.x] * T(VEC); }
} }
"""


def test_asking_for_a_kernel_of_an_isystem_header_names_where_it_is_and_the_flag_that_fuses_it(tmp_path):
    """FlashInfer's kernels are templates in its headers, which its build gives with -isystem;
    its csrc files instantiate them. hfuse keeps such headers as #include lines, so their
    kernels cannot be fused from there: the error names the header, line and folder, and the
    -I that makes hfuse read them as the user's own (which then fuses)."""
    library = tmp_path / "include"
    (library / "mylib").mkdir(parents=True)
    (library / "mylib" / "norm.cuh").write_text(ISYSTEM_KERNELS)
    (tmp_path / "norm.cu").write_text('#include <mylib/norm.cuh>\nvoid launch(float* o, const float* i) '
                                      '{ mylib::norm::RMSNormKernel<4, float><<<1, 256>>>(o, i); }\n')
    spec = KernelSpec(tmp_path / "norm.cu", "mylib::norm::RMSNormKernel", Dim3(256), ("4", "float"))
    with pytest.raises(HFuseError) as info:
        fuse([AXPY, spec], options=CompileOptions.from_flags(system_include_dirs=[str(library)]))
    assert f"defined at {(library / 'mylib' / 'norm.cuh').resolve()}:5" in info.value.hint
    assert f"-I {library.resolve()} instead of -isystem" in info.value.hint
    fused = fuse([AXPY, spec], options=CompileOptions.from_flags(include_dirs=[str(library)]))
    assert "RMSNormKernel" in fused.source and "#include <mylib/norm.cuh>" not in fused.source


@pytest.mark.nvcc
@pytest.mark.parametrize("kernel, layout", [("lambda_reads_thread", "interblock"), ("lambda_doubles", "horizontal"),
                                            ("lambda_through_parameter", "horizontal")])
def test_a_librarys_generic_lambdas_are_judged_by_the_instances_that_run(kernel, layout, tmp_path):
    fused = fuse([AXPY, KernelSpec(C.CORPUS / "real_cpp" / "generic_lambdas.cu", kernel, Dim3(128))],
                 options=_library_options())
    assert fused.layout.name == layout
    compile_nvcc(fused.source, flags=["-isystem", str(SYSINCLUDE)], workdir=tmp_path)


LIBRARY_PRAGMA = """
#include <fakelib/macros.h>
__global__ void unrolled_sums(float* y, const float* x) {
  float acc = 0.f;
  FAKELIB_UNROLL
  for (int k = 0; k < 4; ++k) acc += x[4 * threadIdx.x + k];
  y[threadIdx.x] = acc;
}
"""


@pytest.mark.nvcc
def test_a_librarys_macro_that_is_a_pragma_becomes_the_pragma(tmp_path):
    # once kept as the name: 'FAKELIB_UNROLL for (...)' did not parse (CuTe's CUTE_UNROLL)
    fused = fuse([AXPY, KernelSpec("k.cu", "unrolled_sums", Dim3(128))], sources={"k.cu": LIBRARY_PRAGMA},
                 options=_library_options())
    part = fused.source.split("// ---- part 2")[1]
    assert "#pragma unroll\n" in part and "FAKELIB_UNROLL" not in part
    compile_nvcc(fused.source, flags=["-isystem", str(SYSINCLUDE)], workdir=tmp_path)


SPECIALISED_HEADER = "#pragma once\ntemplate <class T> __device__ T bias() { return T(1); }\n"
SPECIALISES = """#include "shared.cuh"
template <> __device__ float bias<float>() { return 2.f; }
__global__ void ka(float* o, int n) { int t = blockIdx.x * blockDim.x + threadIdx.x; if (t < n) o[t] = bias<float>(); }
"""
USES_THE_PRIMARY = """#include "shared.cuh"
__global__ void kb(float* o, int n) { int t = blockIdx.x * blockDim.x + threadIdx.x; if (t < n) o[t] = bias<float>(); }
"""


@pytest.mark.nvcc
def test_a_files_explicit_specialisation_of_its_headers_template_is_its_own(tmp_path):
    # once refused as "'bias' is defined differently here and in shared.cuh", even alone
    for name, text in (("shared.cuh", SPECIALISED_HEADER), ("a.cu", SPECIALISES), ("b.cu", USES_THE_PRIMARY)):
        (tmp_path / name).write_text(text)
    (tmp_path / "other.cu").write_text("__global__ void other(float* o) { o[threadIdx.x] = 0.f; }\n")
    alone = fuse([KernelSpec(tmp_path / "a.cu", "ka", 128), KernelSpec(tmp_path / "other.cu", "other", 128)]).source
    assert "template <> __device__ float bias<float>() { return 2.f; }" in alone
    # beside a file that has only the primary: each part chooses among its own file's definitions
    both = fuse([KernelSpec(tmp_path / "a.cu", "ka", 128), KernelSpec(tmp_path / "b.cu", "kb", 128)]).source
    assert "template <> __device__ float bias__hf1<float>(" in both and "bias__hf2<float>(" in both
    assert "template <> __device__ float bias__hf2" not in both  # (part 2 runs the primary: T(1))
    compile_nvcc(both, workdir=tmp_path / "build")


@pytest.mark.nvcc
def test_a_files_explicit_specialisation_of_its_headers_class_template_is_its_own(tmp_path):
    # once refused as "'Traits' is defined differently here and in traits.cuh"
    (tmp_path / "traits.cuh").write_text("#pragma once\ntemplate <class T> struct Traits { static constexpr int v = 1; };\n")
    body = "{ int t = blockIdx.x * blockDim.x + threadIdx.x; if (t < n) o[t] = Traits<float>::v + Traits<int>::v; }\n"
    (tmp_path / "a.cu").write_text('#include "traits.cuh"\ntemplate <> struct Traits<float> { static constexpr int v = 2; };\n'
                                   f"__global__ void ka(float* o, int n) {body}")
    (tmp_path / "b.cu").write_text(f'#include "traits.cuh"\n__global__ void kb(float* o, int n) {body}')
    both = fuse([KernelSpec(tmp_path / "a.cu", "ka", 128), KernelSpec(tmp_path / "b.cu", "kb", 128)]).source
    assert "template <> struct Traits__hf1<float> { static constexpr int v = 2; };" in both
    assert "struct Traits__hf2<float>" not in both and "o[t] = Traits__hf2<float>::v" in both
    compile_nvcc(both, workdir=tmp_path / "build")


LENIENT = C.CORPUS / "real_cpp" / "lenient.cu"


@pytest.mark.nvcc
@pytest.mark.nvrtc
def test_a_member_template_called_without_template_is_read_as_nvcc_reads_it(tmp_path):
    # once refused: Clang read `convert<To, From>::run<N>(d, s)` as comparisons, could not
    # instantiate the kernel, and a call through its template parameter named no code
    from toolchain import compile_nvrtc

    fused = fuse([AXPY, KernelSpec(LENIENT, "apply4", Dim3(128), ("__half", "twice"))])
    assert "convert<To, From>::run<N>(d, s);" in fused.source  # the user's text, as written
    compile_nvcc(fused.source, workdir=tmp_path)
    compile_nvrtc(fused.source, [fused.name_expression])


LIBRARY_KERNELS = C.CORPUS / "real_cpp" / "library_kernels.cu"


def test_a_kernel_of_a_kept_library_header_is_not_found_and_the_error_says_how_to_fuse_it():
    spec = KernelSpec(LIBRARY_KERNELS, "fakelib::scale_kernel", Dim3(256), ("float",))
    with pytest.raises(HFuseError, match=r"no __global__ kernel named 'fakelib::scale_kernel'") as error:
        fuse([AXPY, spec], options=_library_options())
    assert "fakelib/kernels.cuh" in error.value.hint and "-I" in error.value.hint


@pytest.mark.nvcc
def test_the_same_header_read_as_the_users_own_fuses(tmp_path):
    from hfuse.frontend.options import CompileOptions

    options = CompileOptions.from_flags(include_dirs=[str(SYSINCLUDE)])
    fused = fuse([AXPY, KernelSpec(LIBRARY_KERNELS, "fakelib::scale_kernel", Dim3(256), ("float",))], options=options)
    assert "#include <fakelib/kernels.cuh>" not in fused.source  # (its kernel is the part's, copied)
    compile_nvcc(fused.source, workdir=tmp_path)


HOST_MEMBERS = C.CORPUS / "real_cpp" / "host_members.cu"


@pytest.mark.nvrtc
@pytest.mark.nvcc
def test_a_class_with_host_members_compiles_under_nvrtc_as_hfuse_tune_compiles_it(tmp_path):
    # "A function explicitly marked as a __host__ function is not allowed in JIT mode" once
    from hfuse.api import device_source
    from hfuse.transform.host_members import GUARD
    from hfuse.frontend.options import CompileOptions
    from toolchain import compile_nvrtc

    options = CompileOptions.from_flags(language_flags=["--expt-relaxed-constexpr"])
    spec = KernelSpec(HOST_MEMBERS, "divide", Dim3(128))
    fused = fuse([AXPY, spec], options=options)
    assert "#ifndef __CUDACC_RTC__  // host code: NVRTC compiles none\n  __host__ Divider() : d(1) {}" in fused.source
    assert "__host__ __device__ constexpr uint32_t bias() const" in fused.source
    assert GUARD + "Divider Divider::from_env(uint32_t fallback)" in fused.source  # (as its declaration is)
    assert "__host__ __device__ uint32_t Step::after(uint32_t v) const" in fused.source
    nvrtc = options.compiler_flags(std=False, pre_includes=False, compiler="nvrtc")
    compile_nvrtc(fused.source, [fused.name_expression], flags=nvrtc)
    compile_nvcc(fused.source, flags=["--expt-relaxed-constexpr"], workdir=tmp_path)
    original = device_source(spec, options=options)
    compile_nvrtc(original.source, [original.name_expression], flags=nvrtc)


LIBRARY_CASTS = C.CORPUS / "real_cpp" / "library_casts.cu"


@pytest.mark.nvcc
def test_a_kept_headers_member_template_called_without_template_is_read_as_nvcc_reads_it(tmp_path):
    # once refused: Clang's walk of fakelib::vec::cast_load stopped at its error ("code Clang
    # reports an error in, which nvcc lets pass"); the header is read as amended, without the
    # precompiled headers, which hold it as it was
    fused = fuse([AXPY, KernelSpec(LIBRARY_CASTS, "scale_half", Dim3(128), ("8",))], options=_library_options())
    assert "#include <fakelib/casts.cuh>" in fused.source  # (still the library's, kept)
    compile_nvcc(fused.source, flags=["-isystem", str(SYSINCLUDE)], workdir=tmp_path)


def test_an_overload_a_using_declaration_brings_beside_the_namespaces_own_is_refused_where_it_reads_the_block(tmp_path):
    # once silently wrong: hfuse took f(x) for lib's own f(int); C++ calls detail::f(float)
    # through `using detail::f;`, which reads threadIdx: the part called the other overload
    path = tmp_path / "overloads.cu"
    path.write_text("namespace lib {\nnamespace detail {\n"
                    "__device__ float f(float v) { return v * (float)threadIdx.x; }\n}  // namespace detail\n"
                    "using detail::f;\n__device__ int f(int v) { return v + 1; }\n"
                    "__global__ void k(float* x) { x[threadIdx.x] = detail::f(1.f) + f(x[threadIdx.x]); }\n}\n")
    with pytest.raises(HFuseError, match=r"the call of 'f' may also find lib::detail::f .*a using-declaration"):
        fuse([AXPY, KernelSpec(path, "lib::k", Dim3(64))])


OVERLOAD_SETS = C.CORPUS / "real_cpp" / "overload_sets.cu"


@pytest.mark.nvcc
@pytest.mark.nvrtc
def test_an_overload_set_a_using_declaration_completes_travels_whole(tmp_path):
    # once did not compile: the using-declaration was kept (its name is written) without
    # detail::scale, which the closure never reached (it took `scale` for ops' own alone)
    from hfuse.frontend.options import CompileOptions
    from toolchain import compile_nvrtc

    for specs in ([AXPY, KernelSpec(OVERLOAD_SETS, "ops::mixed", Dim3(128))],
                  [KernelSpec(OVERLOAD_SETS, "ops::mixed", Dim3(128)), AXPY]):
        fused = fuse(specs)
        assert "__device__ inline float scale(float x) { return 2.0f * x; }" in fused.source
        assert fused.source.index("inline float scale(float") < fused.source.index("using detail::scale;")
        compile_nvcc(fused.source, workdir=tmp_path)
        compile_nvrtc(fused.source, [fused.name_expression],
                      flags=CompileOptions().compiler_flags(std=False, pre_includes=False, compiler="nvrtc"))


MEMBER_REDUCTIONS = C.CORPUS / "real_cpp" / "member_reductions.cu"


@pytest.mark.nvcc
@pytest.mark.nvrtc
def test_a_reduction_through_a_member_of_an_auto_object_fuses_with_the_parts_block(tmp_path):
    # DeepSpeed's quantisation shape, once refused three ways: the warp reached the member
    # through a call hfuse could not follow, a class taking cg::thread_block in a member was
    # taken for an alias of it, and a prototype naming the class for a type of its own (then
    # emitted as written, naming the class no longer emitted; and a helper calling it came
    # before its copy)
    from hfuse.frontend.options import CompileOptions
    from toolchain import compile_nvrtc

    spec = KernelSpec(MEMBER_REDUCTIONS, "qlib::quantize_rows", Dim3(128))
    for specs in ([AXPY, spec], [spec, AXPY]):
        fused = fuse(specs)
        offset = 96 if specs[0] is AXPY else 0
        assert f"partial[(warp.meta_group_rank() - {offset}u / warp.num_threads())] = v;" in fused.source
        assert "const int warps = ((128u + warp.num_threads() - 1u) / warp.num_threads());" in fused.source
        assert "Stats<kind> serial_stats(const float* values);" not in fused.source  # (each part has its copy)
        compile_nvcc(fused.source, workdir=tmp_path)
        compile_nvrtc(fused.source, [fused.name_expression],
                      flags=CompileOptions().compiler_flags(std=False, pre_includes=False, compiler="nvrtc"))


@pytest.mark.nvcc
def test_a_context_type_named_with_its_namespace_and_template_arguments_is_the_parts_copy(tmp_path):
    # once: `qlib::Stats<kind> stats;` kept as written (the class no longer emitted): no compile
    fused = fuse([AXPY, KernelSpec(MEMBER_REDUCTIONS, "row_scales", Dim3(128), ("qlib::Kind::Symmetric",))])
    assert "qlib::Stats__hf2<kind> stats(hf_ctx);" in fused.source
    compile_nvcc(fused.source, workdir=tmp_path)


def test_a_typedef_of_the_thread_block_is_still_refused(tmp_path):
    path = tmp_path / "alias.cu"
    path.write_text("#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\ntypedef cg::thread_block Block;\n"
                    "__global__ void k(float* x) { Block b = cg::this_thread_block(); x[threadIdx.x] = 1.f; b.sync(); }\n")
    with pytest.raises(HFuseError, match=r"'Block' \(alias.cu:3\) stands for cooperative groups' thread_block"):
        fuse([AXPY, KernelSpec(path, "k", Dim3(64))])


TRAITS_ALIASES = C.CORPUS / "real_cpp" / "traits_aliases.cu"


@pytest.mark.nvcc
@pytest.mark.nvrtc
def test_an_object_made_through_a_traits_structs_member_alias_gets_the_parts_view(tmp_path):
    # mamba's selective scan: typename Ktraits::BlockReverseScanT(smem) of a class that reads
    # threadIdx; the alias's target became the part's copy, whose constructors take the part's
    # view of the block, but the object was made without it: the output did not compile
    from hfuse.frontend.options import CompileOptions
    from toolchain import compile_nvrtc

    spec = KernelSpec(TRAITS_ALIASES, "suffix_scan_kernel", Dim3(128), ("Scan_kernel_traits<128, __half>",))
    for specs in ([AXPY, spec], [spec, AXPY]):
        fused = fuse(specs)
        part = 2 if specs[0] is AXPY else 1
        assert "typename Ktraits::SuffixScanT(hf_ctx, storage).Scan(v)" in fused.source
        assert "typename Ktraits::SuffixScanT scanner(hf_ctx, storage);" in fused.source
        assert f"using SuffixScanT = BlockSuffixSum__hf{part}<float, kThreads>;" in fused.source
        compile_nvcc(fused.source, workdir=tmp_path)
        compile_nvrtc(fused.source, [fused.name_expression],
                      flags=CompileOptions().compiler_flags(std=False, pre_includes=False, compiler="nvrtc"))


def test_a_member_alias_of_two_meanings_is_no_alias_of_the_type():
    from hfuse.frontend.model import TopLevelItem
    from hfuse.transform.aliases import type_aliases

    traits = TopLevelItem("declaration", "struct T { using ScanT = Scan<float, 4>; typedef Scan<int, 2> Other; "
                          "using Ptr = Scan<float, 4>*; };", ("T",), None, 1)
    scan = TopLevelItem("declaration", "template <typename V, int N> struct Scan { };", ("Scan",), None, 1)
    assert type_aliases([traits, scan]) == (("Other", "Scan"), ("ScanT", "Scan"))
    other = TopLevelItem("declaration", "struct U { using ScanT = int; };", ("U",), None, 1)
    assert type_aliases([traits, scan, other]) == (("Other", "Scan"),)


DECLARED_SPECIALISATIONS = C.CORPUS / "real_cpp" / "declared_specialisations.cu"


@pytest.mark.nvcc
@pytest.mark.nvrtc
def test_a_kernel_template_only_declared_is_fused_as_its_explicit_specialisation(tmp_path):
    # DeepSpeed's transform_kernels.cu: "no __global__ kernel named 'transform_0213'" once
    from hfuse.api import device_source
    from hfuse.frontend.options import CompileOptions
    from toolchain import compile_nvrtc

    nvrtc = CompileOptions().compiler_flags(std=False, pre_includes=False, compiler="nvrtc")
    for argument, loads in (("float", "reinterpret_cast<const float4*>(in)[i]"), ("__half", "__hmul2(")):
        spec = KernelSpec(DECLARED_SPECIALISATIONS, "scale_rows", Dim3(128), (argument,))
        for specs in ([AXPY, spec], [spec, AXPY]):
            fused = fuse(specs)
            assert loads in fused.source
            compile_nvcc(fused.source, workdir=tmp_path)
            compile_nvrtc(fused.source, [fused.name_expression], flags=nvrtc)
        original = device_source(spec)
        compile_nvrtc(original.source, [original.name_expression], flags=nvrtc)


def test_an_instance_no_explicit_specialisation_is_for_is_refused():
    with pytest.raises(HFuseError, match=r"'scale_rows' is only declared at line 5; of its explicit specialisations "
                                         r"\(scale_rows<float>, scale_rows<__half>\) none is for <int>"):
        fuse([AXPY, KernelSpec(DECLARED_SPECIALISATIONS, "scale_rows", Dim3(128), ("int",))])
    with pytest.raises(HFuseError, match=r"only declared at line 5"):
        fuse([AXPY, KernelSpec(DECLARED_SPECIALISATIONS, "scale_rows", Dim3(128))])


SPELLED = C.CORPUS / "real_cpp" / "spelled_specialisations.cu"


@pytest.mark.nvcc
@pytest.mark.skipif(isinstance(__import__("hfuse.frontend.clang", fromlist=["x"]).clang_arguments(CompileOptions()),
                               str), reason="Clang (libclang-ng) cannot read CUDA here")
@pytest.mark.parametrize("argument, helper", [
    ("float", "clamped_area("),  # box_areas<boxlib::real> is box_areas<float>: Clang says so
    ("boxlib::Half16", "half_area("),
    ("double", "= area("),  # neither specialisation: the primary
])
def test_an_instance_runs_the_specialisation_a_compiler_says_it_is(tmp_path, argument, helper):
    # mmcv's bbox_overlaps: template <> __global__ void k<at::Half>, asked for k<float>, was refused
    # ("cannot tell"); asked for k<c10::Half>, the output lacked the helpers the specialisation calls
    fused = fuse([AXPY, KernelSpec(SPELLED, "box_areas", Dim3(128), (argument,))])
    bodies = ("clamped_area(", "half_area(", "= area(")
    assert [h for h in bodies if h in fused.source] == [helper]  # its own body, no other definition's
    compile_nvcc(fused.source, workdir=tmp_path)


ROW_STATS = C.CORPUS / "real_cpp" / "row_stats.cu"


@pytest.mark.nvcc
@pytest.mark.nvrtc
def test_stats_classes_as_normalisation_libraries_write_them(tmp_path):
    # flash-attn's layer norm: each of these made the output fail to compile (or refused it)
    from toolchain import compile_nvrtc

    spec = KernelSpec(ROW_STATS, "row_norm_kernel", Dim3(128), ("Norm_traits<float, 4>",))
    for specs in ([AXPY, spec], [spec, AXPY]):
        fused = fuse(specs)
        part = 2 if specs[0] is AXPY else 1
        # a member alias that shadows the class template keeps its name (typename Ktraits::Stats reads it)
        assert f"using Reducer = Reducer__hf{part}<T, WARPS>;" in fused.source
        assert f"using Stats = rowstats::Stats__hf{part}<T, WARPS>;" in fused.source
        assert "using Stats = typename Ktraits::Stats;" in fused.source
        # a member of such a type made by the user's initialiser list, and an object of a local alias of it
        assert "reducer_(hf_part_ctx, smem, hf_ctx.threadIdx.x / 32, lane)" in fused.source
        assert "Stats stats(hf_ctx, smem, col % 32);" in fused.source
        # a member template's specialisations, defined outside the class template's specialisations
        assert fused.source.count("template <>\ntemplate <typename V, typename R>\ninline __device__ R Pick<") == 2
        # the barrier of Stats::compute's reducer_.sum (a member of an alias's type, of a partial
        # specialisation's family) is the part's
        assert "hfuse_sync<1, 128>();" in fused.source
        compile_nvcc(fused.source, workdir=tmp_path)
        compile_nvrtc(fused.source, [fused.name_expression],
                      flags=CompileOptions().compiler_flags(std=False, pre_includes=False, compiler="nvrtc"))


def test_a_kept_header_clang_rejects_in_places_fuses_what_reaches_none_of_them(tmp_path):
    # Transformer Engine's norm headers keep cuDNN frontend, whose host code Clang's CUDA mode
    # rejects (26 errors): once "too many errors emitted" refused every kernel of the file
    (tmp_path / "inc" / "lib").mkdir(parents=True)
    (tmp_path / "inc" / "lib" / "mixed.cuh").write_text("#pragma once\nnamespace lib {\n" + "".join(
        f"inline int host{i}() {{ return undeclared{i}; }}\n" for i in range(25)) +
        "__device__ inline int plain(int x) { return x + 1; }\n"
        "__device__ inline int broken() { return threadIdx.x + undeclared; }\n}\n")
    source = tmp_path / "k.cu"
    source.write_text("#include <lib/mixed.cuh>\n"
                      "__global__ void uses_plain(int* o) { o[threadIdx.x] = lib::plain(threadIdx.x); }\n"
                      "__global__ void uses_broken(int* o) { o[threadIdx.x] = lib::broken(); }\n"
                      "__global__ void other(float* y) { y[threadIdx.x] += 1.f; }\n")
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "inc")])
    other = KernelSpec(source, "other", Dim3(64))
    fused = fuse([KernelSpec(source, "uses_plain", Dim3(128)), other], options=options)
    assert fused.layout.name == "horizontal" and "lib::plain(hf_ctx.threadIdx.x)" in fused.source
    with pytest.raises(HFuseError, match="lib::broken"):
        fuse([KernelSpec(source, "uses_broken", Dim3(128)), other], options=options)
