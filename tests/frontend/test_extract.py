from pathlib import Path

import pytest

from hfuse.errors import HFuseError
from hfuse.frontend.extract import model_source
from hfuse.frontend.program import Program

SOURCE = """#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__constant__ unsigned int table[4] = {1, 2, 3, 4};
struct Pair { int a, b; };
__device__ __forceinline__ float twice(float x) { return 2.f * x; }
template <typename T, int N>
__global__ void __launch_bounds__(256, 2) scale(T* __restrict__ a, const int n, Pair p) { a[0] = 1; }
extern "C" __global__ void plain(float* a) { }
extern __shared__ float dynamic_area[];
static void host_side() { }
"""


def test_model_finds_kernels_helpers_and_declarations():
    source = model_source(Path("k.cu"), SOURCE)
    kernels = source.kernels
    assert set(kernels) == {"scale", "plain"}
    scale = kernels["scale"]
    assert scale.template_params == ("T", "N")
    assert scale.launch_bounds == ("256", "2") and scale.max_threads() == 256
    assert [p.name for p in scale.params] == ["a", "n", "p"]
    assert scale.line == 6
    assert kernels["plain"].extern_c
    kinds = {f.name: f.kind for f in source.functions}
    assert kinds == {"twice": "device", "scale": "global", "plain": "global", "host_side": "host"}
    declared = {n for i in source.items for n in i.names}
    assert {"cg", "table", "Pair", "dynamic_area"} <= declared


def test_kernel_attributes_the_grammar_lacks():
    """``__maxnreg__`` and ``__cluster_dims__`` (blanked for the parser, read from the text)
    and ``__launch_bounds__``'s third argument: each kernel is still a kernel, with its name."""
    source = model_source(Path("k.cu"), (
        "__global__ void __maxnreg__(64) capped(float* x) { x[0] = 1.f; }\n"
        "__global__ void __launch_bounds__((BM * BN) / (TM * (TN)), 2, 4) three(float* x) { x[0] = 2.f; }\n"
        "template <int C> __global__ void __cluster_dims__(C, 1, 1) __launch_bounds__(128) clustered(float* x) {}\n"
    ))
    kernels = source.kernels
    assert set(kernels) == {"capped", "three", "clustered"}
    assert kernels["capped"].max_registers == "64" and kernels["capped"].cluster_dims is None
    assert kernels["three"].launch_bounds == ("(BM * BN) / (TM * (TN))", "2")
    assert kernels["clustered"].cluster_dims == "C, 1, 1" and kernels["clustered"].max_threads() == 128
    assert [p.name for p in kernels["three"].params] == ["x"]


def test_param_rename_keeps_qualifiers():
    scale = model_source(Path("k.cu"), SOURCE).kernels["scale"]
    assert scale.params[0].renamed("hf1_a") == "T* __restrict__ hf1_a"


def test_program_merges_identical_definitions_and_records_or_refuses_conflicts():
    a = model_source(Path("a.cu"), "__device__ int f(int x) { return x; }\n__global__ void ka(int* p) { p[0] = f(1); }\n")
    b = model_source(Path("b.cu"), "__device__ int f(int x) { return x; }\n__global__ void kb(int* p) { p[0] = f(2); }\n")
    program = Program.merge([a, b])
    assert len(program.functions["f"]) == 1 and not program.function_clashes
    # a function of one name defined differently: each file's is kept, for a copy per part
    c = model_source(Path("c.cu"), "__device__ int f(int x) { return -x; }\n__global__ void kc(int* p) { }\n")
    clash = Program.merge([a, c]).function_clashes["f"]
    assert [i.text for i in clash[Path("a.cu")]] == ["__device__ int f(int x) { return x; }"]
    assert [i.text for i in clash[Path("c.cu")]] == ["__device__ int f(int x) { return -x; }"]
    # a type of one name defined differently: each file's, for a renamed copy per part
    d = model_source(Path("d.cu"), "struct S { int a; };\n__global__ void kd(S* p) { }\n")
    e = model_source(Path("e.cu"), "struct S { float b; };\n__global__ void ke(S* p) { }\n")
    owners = Program.merge([d, e]).clashing_symbols()["S"]
    assert {path.name: item.text for path, item in owners.items()} == {"d.cu": "struct S { int a; };",
                                                                       "e.cu": "struct S { float b; };"}
    # one with member functions written in it too: a copy of its text is a copy of the class
    f = model_source(Path("f.cu"), "struct S { int a; __device__ int g() const { return a; } };\n__global__ void kf() { }\n")
    g = model_source(Path("g.cu"), "struct S { int b; __device__ int g() const { return -b; } };\n__global__ void kg() { }\n")
    assert set(Program.merge([f, g]).clashing_symbols()["S"]) == {Path("f.cu"), Path("g.cu")}
    # but not one with a member defined outside it (that definition would need a copy of its own)
    h = model_source(Path("h.cu"), "struct S { int b; __device__ int g() const; };\n"
                                   "__device__ int S::g() const { return -b; }\n__global__ void kh() { }\n")
    with pytest.raises(HFuseError) as err:
        Program.merge([f, h])
    assert "'S'" in str(err.value) and "h.cu:1" in str(err.value) and "f.cu:1" in str(err.value)


@pytest.mark.parametrize("definition", ["constexpr float kScale = float({v});",
                                        "template <class T> constexpr T kScale = T({v});",
                                        "template <class T = float> constexpr T kScale = static_cast<T>({v});"])
def test_constants_whose_initialiser_calls_are_definitions_one_per_part(definition):
    # an initialiser with parentheses is no prototype: two files' values are two constants
    a, b = (model_source(Path(f"{n}.cu"), definition.format(v=v) + f"\n__global__ void k{n}(float* p) {{ }}\n")
            for n, v in (("a", 2), ("b", 3)))
    owners = Program.merge([a, b]).clashing_symbols()["kScale"]
    assert {path.name: item.text for path, item in owners.items()} == {
        "a.cu": definition.format(v=2), "b.cu": definition.format(v=3)}
    # and a prototype is still one, template header and default arguments and all
    c = model_source(Path("c.cu"), "template <int N = 2> __device__ float kScale(float x = 1.f);\n"
                                   "__global__ void kc(float* p) { }\n")
    assert "kScale" not in Program.merge([a, c]).clashing_symbols()


def test_unknown_kernel_suggests_a_close_name():
    program = Program.merge([model_source(Path("k.cu"), SOURCE)])
    with pytest.raises(HFuseError) as err:
        program.kernel("scal", Path("k.cu"))
    assert "did you mean 'scale'" in str(err.value)
    with pytest.raises(HFuseError, match="device function, not a __global__ kernel"):
        program.kernel("twice", Path("k.cu"))


def test_a_kernel_behind_an_undefined_macro_says_which_macro_hid_it(tmp_path):
    # C10_LAUNCH_BOUNDS_1 comes from a PyTorch header; where that header is not found, the
    # kernel reads as a host function named C10_LAUNCH_BOUNDS_1 and the name after it
    path = tmp_path / "ext.cu"
    path.write_text("#include <c10/macros/Macros.h>\ntemplate <typename T>\n__global__ void C10_LAUNCH_BOUNDS_1(256)\n"
                    "scale_rows(T* x) { x[threadIdx.x] *= 2; }\n")
    program = Program.merge([model_source(path, path.read_text())])
    with pytest.raises(HFuseError, match="host function, not a __global__ kernel") as err:
        program.kernel("scale_rows", path)
    assert "'C10_LAUNCH_BOUNDS_1', which no header hfuse read defines" in err.value.hint


TEMPLATES = """template <int N> struct Unrolled { static constexpr int kWidth = N; };
template <typename T, template <int> class Policy = Unrolled, typename = void, int kVec = 4, typename... Ins>
__global__ void k(const T* __restrict__ in, T* out, const Ins* __restrict__... ins) {}
"""


def test_template_parameters_of_every_kind_have_their_names_and_defaults():
    kernel = model_source(Path("k.cu"), TEMPLATES).kernels["k"]
    # a template-template parameter is named (once: an empty name, and a garbled signature);
    # an unnamed one stays unnamed (its default is not its name)
    assert kernel.template_params == ("T", "Policy", "", "kVec", "Ins")
    assert kernel.template_defaults == (None, "Unrolled", "void", "4", None)
    assert kernel.template_pack == "Ins"
    assert [p.name for p in kernel.params] == ["in", "out", "ins"]  # a pointer pack parses


def test_a_kernel_given_no_arguments_takes_every_default():
    source = "template <int kRows = 4, class T = float> __global__ void k(T* o) {}\n"
    kernel = model_source(Path("k.cu"), source).kernels["k"]
    assert kernel.complete_template_args(()) == ("4", "float")
    assert kernel.complete_template_args(("8",)) == ("8", "float")
    partial = model_source(Path("k.cu"), "template <int R, class T = float> __global__ void k(T* o) {}\n")
    assert partial.kernels["k"].complete_template_args(()) == ()  # R has no default: left to the caller


def test_the_pointer_pack_mask_leaves_block_comments_alone():
    # '/* ...' once became '/& ...' for the parser: the comment swallowed the struct after it,
    # and a struct defined differently in two files was no longer seen at all
    from hfuse.frontend.parse import mask

    source = "/* ... and this file defines it another way */\nstruct Mix { int scale; };\n"
    assert mask(source.encode()) == source.encode()
    items = model_source(Path("k.cu"), source).items
    assert [(i.kind, i.names) for i in items if i.kind == "declaration"] == [("declaration", ("Mix",))]


def test_a_lambdas_execution_space_and_a_constexpr_host_function_are_read():
    source = ("constexpr int ceil_div(int a, int b) { return (a + b - 1) / b; }\n"
              "template <class F> __global__ void each(F f) { f(1); }\n"
              "__device__ void use() { auto g = [] __device__ (float v) { return v; }; g(1.f); }\n")
    items = model_source(Path("k.cu"), source).items
    use = next(i for i in items if i.function is not None and i.function.name == "use")
    assert use.function.kind == "device"  # once: the lambda's __device__ made the function unreadable
    ceil = next(i for i in items if i.function is not None and i.function.name == "ceil_div")
    assert ceil.function.kind == "host" and ceil.device  # kept wherever a device constant names it


def test_a_member_defined_outside_its_class_is_one_of_its_members():
    source = model_source(Path("m.cu"), """
namespace lib {
struct W { int b; __device__ int f() const; };
__device__ void helper();
}
__device__ int lib::W::f() const { return b; }
__device__ void lib::helper() {}
template <class T> struct V { T x; __device__ T sum() const; };
template <class T> __device__ T V<T>::sum() const { return x; }
""")
    functions = {f.key: f for f in source.functions}
    f, total = functions["lib::W::f"], functions["V::sum"]
    assert (f.name, f.owner, f.scope, f.defined_outside) == ("f", "W", ("lib",), True)
    assert (total.name, total.owner, total.defined_outside) == ("sum", "V", True)
    assert functions["lib::helper"].owner is None  # a namespace's function written with its qualified name
    classes = {i.names[0]: i for i in source.items if i.kind == "declaration" and i.names}
    assert f in classes["W"].members and total in classes["V"].members
