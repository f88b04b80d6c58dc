"""A file-scope ``using namespace N;`` of one input reaches, in the fused file, only the code
that saw it compiled apart (``codegen/directive_scope.py``)."""
from __future__ import annotations

import pytest

from hfuse.api import fuse
from hfuse.errors import HFuseError
from hfuse.frontend.options import CompileOptions
from hfuse.spec import KernelSpec

from toolchain import compile_nvcc

OWN_DETAIL = """namespace detail {
__device__ int round_up(int x, int m) { return (x + m - 1) / m * m; }
}
__global__ void padded(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * detail::round_up(n, 4);
}
"""
LIBRARY_DETAIL = """namespace lib {
namespace detail { __device__ float half_of(float x) { return 0.5f * x; } }
__device__ float halve(float x) { return detail::half_of(x); }
}
using namespace lib;
__global__ void halved(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = halve(in[i]);
}
"""
SOURCES = {"own.cu": OWN_DETAIL, "lib.cu": LIBRARY_DETAIL}


def _specs(*files: str) -> list[KernelSpec]:
    kernels = {"own.cu": "padded", "lib.cu": "halved"}
    return [KernelSpec(f, kernels[f], 128) for f in files]


@pytest.mark.parametrize("order", [("own.cu", "lib.cu"), ("lib.cu", "own.cu")])
@pytest.mark.nvcc
def test_code_that_saw_no_directive_is_written_before_it(order, tmp_path):
    # after 'using namespace lib;', 'detail::round_up' would be ambiguous (::detail or lib::detail)
    source = fuse(_specs(*order), sources=SOURCES).source
    own_part = source.index("detail::round_up(n, 4)")
    directive = source.index("using namespace lib;")
    lib_part = source.index("= halve(in[i])")
    assert source.index("namespace detail {") < own_part < directive < lib_part
    assert source.count("using namespace lib;") == 1
    compile_nvcc(source, flags=["-arch=sm_90"], workdir=tmp_path)


def test_a_part_is_split_where_its_file_wrote_the_directive():
    # a helper before the directive never saw it; the kernel after it did
    before = "__device__ float twice(float x) { return 2.f * x; }\n"
    split = before + LIBRARY_DETAIL.replace("halve(in[i])", "twice(halve(in[i]))")
    source = fuse(_specs("own.cu", "lib.cu"), sources={**SOURCES, "lib.cu": split}).source
    assert source.index("return 2.f * x;") < source.index("using namespace lib;") < source.index("twice(halve(")


VENDOR_HEADER = """#pragma once
namespace vendor {
template <class T> __host__ __device__ T twice(T x) { return 3 * x; }
template <class T> __host__ __device__ T clamp01(T x) { return x < T(0) ? T(0) : (x > T(1) ? T(1) : x); }
}
"""
PLAIN = """__device__ float twice(float x) { return 2.0f * x; }
__global__ void doubled(const int* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = twice(in[i]);
}
"""
VENDORED = """#include <vendor/ops.h>
using namespace vendor;
__global__ void clamped(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = clamp01(in[i]);
}
"""


@pytest.fixture
def vendor(tmp_path):
    (tmp_path / "sys" / "vendor").mkdir(parents=True)
    (tmp_path / "sys" / "vendor" / "ops.h").write_text(VENDOR_HEADER)
    (tmp_path / "plain.cu").write_text(PLAIN)
    (tmp_path / "vendored.cu").write_text(VENDORED)
    return tmp_path


@pytest.mark.parametrize("order", [("plain.cu", "doubled"), ("vendored.cu", "clamped")])
@pytest.mark.nvcc
def test_a_kept_librarys_directive_no_longer_chooses_another_inputs_overload(vendor, order, tmp_path):
    # doubled's twice(in[i]) (an int) means its own twice(float): 2 * x. Once, the fused file put
    # it after 'using namespace vendor;', where the template vendor::twice<int> matched
    # better, and the part wrote 3 * x with no error
    options = CompileOptions(system_include_dirs=(str(vendor / "sys"),))
    specs = [KernelSpec(vendor / "plain.cu", "doubled", 128), KernelSpec(vendor / "vendored.cu", "clamped", 128)]
    if order[0] == "vendored.cu":
        specs.reverse()
    source = fuse(specs, options=options).source
    assert source.index("out[i] = twice(in[i])") < source.index("using namespace vendor;")
    compile_nvcc(source, flags=["-arch=sm_90", "-isystem", str(vendor / "sys")], workdir=tmp_path / "build")


@pytest.mark.parametrize("first", ["plain.cu", "declared.cu"])
@pytest.mark.nvcc
def test_a_kept_librarys_using_declaration_is_kept_and_reaches_only_its_own_files_code(vendor, first, tmp_path):
    # 'using vendor::twice;' brings one name, which doubled's twice(in[i]) would then find
    # (vendor::twice<int>, 3x); and 'using vendor::clamp01;' was once dropped, so clamp01 was undefined
    (vendor / "declared.cu").write_text(VENDORED.replace("using namespace vendor;",
                                                         "using vendor::clamp01;\nusing vendor::twice;"))
    specs = [KernelSpec(vendor / "plain.cu", "doubled", 128), KernelSpec(vendor / "declared.cu", "clamped", 128)]
    if first == "declared.cu":
        specs.reverse()
    source = fuse(specs, options=CompileOptions(system_include_dirs=(str(vendor / "sys"),))).source
    assert source.index("out[i] = twice(in[i])") < source.index("using vendor::twice;") < source.index("= clamp01(")
    assert "using vendor::clamp01;" in source
    compile_nvcc(source, flags=["-arch=sm_90", "-isystem", str(vendor / "sys")], workdir=tmp_path / "build")


@pytest.mark.nvcc
def test_a_directive_inside_a_namespace_both_inputs_use_reaches_only_its_own_files_code(vendor, tmp_path):
    # 'namespace kern { using namespace vendor; }' reaches all of kern's code after it: doubled's
    # twice(in[i]), in kern too, once took vendor::twice<int> (3x)
    (vendor / "plain.cu").write_text(PLAIN.replace("__global__ void doubled", "namespace kern {\n__global__ void doubled")
                                     + "}  // namespace kern\n")
    (vendor / "vendored.cu").write_text(VENDORED.replace("using namespace vendor;\n", "namespace kern {\nusing namespace vendor;\n")
                                        + "}  // namespace kern\n")
    specs = [KernelSpec(vendor / "plain.cu", "kern::doubled", 128), KernelSpec(vendor / "vendored.cu", "kern::clamped", 128)]
    source = fuse(specs, options=CompileOptions(system_include_dirs=(str(vendor / "sys"),))).source
    assert source.index("out[i] = twice(in[i])") < source.index("using namespace vendor;") < source.index("= clamp01(")
    compile_nvcc(source, flags=["-arch=sm_90", "-isystem", str(vendor / "sys")], workdir=tmp_path / "build")


@pytest.mark.nvcc
def test_a_directive_inside_a_namespace_does_not_reach_code_outside_it(vendor, tmp_path):
    # kern's directive and tripled's file-scope one cross (neither file saw the other's), which
    # no order could place had the first reached code outside kern: tripled's code is not in kern
    (vendor / "vendored.cu").write_text(VENDORED.replace("using namespace vendor;\n", "namespace kern {\nusing namespace vendor;\n")
                                        + "}  // namespace kern\n")
    (vendor / "tripled.cu").write_text(VENDORED.replace("clamped", "tripled").replace("clamp01(in[i])", "twice(in[i])"))
    specs = [KernelSpec(vendor / "vendored.cu", "kern::clamped", 128), KernelSpec(vendor / "tripled.cu", "tripled", 128)]
    source = fuse(specs, options=CompileOptions(system_include_dirs=(str(vendor / "sys"),))).source
    assert source.index("= clamp01(in[i])") < source.index("using namespace vendor;\n\n// ---- part 2")
    compile_nvcc(source, flags=["-arch=sm_90", "-isystem", str(vendor / "sys")], workdir=tmp_path / "build")


def test_a_call_another_input_would_answer_is_refused(vendor):
    # tripled's twice(x) is vendor::twice<float> (3 * x); fused, plain.cu's ::twice(float) is an
    # exact match, chosen over the template: 2 * x, silently
    (vendor / "vendored.cu").write_text(VENDORED.replace("clamp01(in[i])", "twice(in[i])"))
    options = CompileOptions(system_include_dirs=(str(vendor / "sys"),))
    for specs in ([KernelSpec(vendor / "plain.cu", "doubled", 128), KernelSpec(vendor / "vendored.cu", "clamped", 128)],
                  [KernelSpec(vendor / "vendored.cu", "clamped", 128), KernelSpec(vendor / "plain.cu", "doubled", 128)]):
        with pytest.raises(HFuseError, match=r"clamped's code calls 'twice', which vendored.cu does not define, "
                                             r"but another input does \(plain.cu:1\)") as err:
            fuse(specs, options=options)
        assert err.value.where.line == 3 and "rename the other input's 'twice'" in err.value.hint


def _directive_file(namespace: str, kernel: str, calls: str) -> str:
    return (f"namespace {namespace} {{ __device__ float f(float x) {{ return x; }} "
            f"__device__ float g(float x) {{ return -x; }} }}\nusing namespace {namespace};\n"
            f"__global__ void {kernel}(float* o) {{ o[threadIdx.x] = {calls}(1.f); }}\n")


def test_code_that_saw_different_directives_is_refused():
    # each file's kernel saw its own directive only, and reads a name the other's namespace
    # has too: no order gives both exactly what they saw
    sources = {name: f"namespace {n} {{ constexpr float scale = {v}; }}\nusing namespace {n};\n"
                     f"__global__ void k{n}(float* o) {{ o[threadIdx.x] = scale; }}\n"
               for name, n, v in (("one.cu", "a", "2.f"), ("two.cu", "b", "3.f"))}
    with pytest.raises(HFuseError, match="saw 'using namespace a;' and not 'using namespace b;'") as err:
        fuse([KernelSpec("one.cu", "ka", 64), KernelSpec("two.cu", "kb", 64)], sources=sources)
    assert "qualify the names" in err.value.hint


@pytest.mark.nvcc
def test_a_directive_of_the_users_namespace_may_reach_code_that_names_none_of_its_names(tmp_path):
    # b has only h: kb's code after 'using namespace a;' finds nothing more, so a goes first
    two = _directive_file("b", "kb", "h").replace("__device__ float f(float x) { return x; } "
                                                    "__device__ float g(float x) { return -x; }",
                                                    "__device__ float h(float x) { return 2.f * x; }")
    for order in (("one.cu", "two.cu"), ("two.cu", "one.cu")):
        source = fuse([KernelSpec(f, {"one.cu": "ka", "two.cu": "kb"}[f], 64) for f in order],
                      sources={"one.cu": _directive_file("a", "ka", "f"), "two.cu": two}).source
        assert source.index("using namespace a;") < source.index("= f(1.f)") < source.index("using namespace b;") \
            < source.index("= h(1.f)")
    compile_nvcc(source, flags=["-arch=sm_90"], workdir=tmp_path)


@pytest.mark.nvcc
def test_what_two_inputs_wrote_before_the_same_directive_stays_before_it(tmp_path):
    # both files define lib's helpers, then 'using namespace lib;', then their kernel: the
    # helpers (each part's own copy: they differ) before the one directive, the kernels after
    other = LIBRARY_DETAIL.replace("halved", "halved_again").replace("0.5f", "0.25f")
    source = fuse([KernelSpec("lib.cu", "halved", 128), KernelSpec("two.cu", "halved_again", 128)],
                  sources={"lib.cu": LIBRARY_DETAIL, "two.cu": other}).source
    directive = source.index("using namespace lib;")
    assert source.count("using namespace lib;") == 1
    assert max(source.index("float halve__hf1("), source.index("float halve__hf2(")) < directive
    assert directive < min(source.index("void halved__hf1("), source.index("void halved_again__hf2("))
    compile_nvcc(source, flags=["-arch=sm_90"], workdir=tmp_path)


HEADER = "#pragma once\n__device__ inline float act(float x) { return x > 0.f ? x : 0.f; }\n"
AFTER_DIRECTIVE = """namespace lib { __device__ float square(float x) { return x * x; } }
using namespace lib;
#include "common.cuh"
__global__ void ka(float* o, const float* i, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n) o[t] = act(i[t]) + square(i[t]);
}
"""
WITHOUT_DIRECTIVE = """#include "common.cuh"
__global__ void kb(float* o, const float* i, int n) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t < n) o[t] = act(i[t]);
}
"""


def _with_header(tmp_path, header: str):
    for name, text in (("common.cuh", header), ("a.cu", AFTER_DIRECTIVE), ("b.cu", WITHOUT_DIRECTIVE)):
        (tmp_path / name).write_text(text)
    return [KernelSpec(tmp_path / "a.cu", "ka", 128), KernelSpec(tmp_path / "b.cu", "kb", 128)]


@pytest.mark.nvcc
def test_a_header_one_input_includes_after_its_directive_is_written_before_it_where_that_changes_nothing(tmp_path):
    # act names nothing of lib: it finds the same before the directive as after it
    source = fuse(_with_header(tmp_path, HEADER)).source
    assert source.count("inline float act(") == 1
    assert source.index("inline float act(") < source.index("using namespace lib;") < source.index("+ square(i[t])")
    compile_nvcc(source, flags=["-arch=sm_90"], workdir=tmp_path / "build")


def test_a_header_one_input_includes_after_its_directive_is_refused_where_it_names_the_namespaces_names(tmp_path):
    # here act reads kSlope: lib's in a.cu (after the directive), b.cu's own global one in b.cu
    header = HEADER.replace("return x > 0.f ? x : 0.f;", "return x > 0.f ? x : kSlope * x;")
    specs = _with_header(tmp_path, header)
    (tmp_path / "a.cu").write_text(AFTER_DIRECTIVE.replace("namespace lib {", "namespace lib { constexpr float kSlope = 0.1f;"))
    (tmp_path / "b.cu").write_text("constexpr float kSlope = 0.2f;\n" + WITHOUT_DIRECTIVE)
    with pytest.raises(HFuseError, match=r"'act' is shared by a.cu, where 'using namespace lib;' precedes it, and "
                                         r"b.cu, where it does not") as err:
        fuse(specs)
    assert err.value.where.line == 2 and "include the shared header before the using-directive" in err.value.hint


def test_only_namespaces_no_kept_header_may_extend_are_known_by_their_names():
    from pathlib import Path

    from hfuse.frontend.directive_names import namespace_members
    from hfuse.frontend.model import SourceFile, TopLevelItem

    def item(scope: tuple[str, ...], name: str) -> TopLevelItem:
        return TopLevelItem("function", f"__device__ float {name}(float x);", (name,), Path("a.cu"), 1, scope=scope)

    source = SourceFile(Path("a.cu"), "", items=[item(("mylib",), "f"), item(("mylib", "detail"), "g"),
                                                 item(("vendor",), "mine"), item(("cute",), "helper")],
                        kept_includes=("#include <vendor/ops.h>", "#include <cute/tensor.hpp>"))
    # vendor's and cute's headers may declare anything there; mylib is the user's alone
    assert namespace_members([source]) == {"mylib": {"f", "detail"}, "mylib::detail": {"g"}}
