"""Which definition an instance of a kernel template runs: ``Program.kernel`` returns the
explicit specialisation for the arguments asked (once: the primary's body, compiled and wrong)."""
from __future__ import annotations

from pathlib import Path

import pytest

from hfuse.errors import HFuseError
from hfuse.frontend.extract import model_source
from hfuse.frontend.program import Program

SOURCE = """struct T { int unused; };
template <typename T, int kVec = 1>
__global__ void fill(T* out, int n) { out[0] = T(kVec); }

template <>
__global__ void fill<float, 4>(float* out, int n) { out[0] = 4.5f; }

template <> __global__ void fill< int >(int* out, int n) { out[0] = -1; }

namespace lib {
template <typename T> __global__ void zero(T* out) { out[0] = T(); }
template <> __global__ void zero<char>(char* out) { out[0] = 'z'; }
}
"""


def _kernel(name: str, *args: str, text: str = SOURCE):
    path = Path("k.cu")
    return Program([model_source(path, text)]).kernel(name, path, args)


@pytest.mark.parametrize("args, body", [
    (("float", "4"), "out[0] = 4.5f;"),
    (("int",), "out[0] = -1;"),
    (("int", "1"), "out[0] = -1;"),  # the default filled in on either side
    (("float",), "out[0] = T(kVec);"),  # no specialisation for <float, 1>: the primary
    (("double", "4"), "out[0] = T(kVec);"),
])
def test_the_instance_runs_its_specialisation(args, body):
    kernel = _kernel("fill", *args)
    assert body in kernel.text and kernel.name == "fill"
    assert len(kernel.template_params) == 2  # instantiated like the primary, with the same arguments


def test_a_specialisation_becomes_a_template_whose_parameters_hide_no_name():
    kernel = _kernel("fill", "float", "4")
    # the file's struct T stays reachable in the body: the parameters are renamed
    assert kernel.text.startswith("template <typename hf_spec_T, int hf_spec_kVec = 1>\n__global__ void fill(float* out")
    assert kernel.template_params == ("hf_spec_T", "hf_spec_kVec") and kernel.line == 5


def test_in_a_namespace():
    assert "'z'" in _kernel("lib::zero", "char").text and "T()" in _kernel("lib::zero", "float").text


def test_specialisations_are_no_kernels_of_their_own():
    assert set(model_source(Path("k.cu"), SOURCE).kernels) == {"fill", "lib::zero"}


def test_a_specialisation_with_deduced_arguments_is_read_off_its_parameters():
    # mmcv's sync_bn: template <> __global__ void k(const phalf* input, float* mean, ...)
    text = "template <typename T> __global__ void k(const T* x, float* y) { y[0] = T(1); }\n" \
           "template <> __global__ void k(const double* in, float* y) { y[0] = 2.f; }\n"
    assert "2.f" in _kernel("k", "double", text=text).text
    assert "T(1)" in _kernel("k", "float", text=text).text


def test_a_specialisation_whose_arguments_hfuse_cannot_read_off_is_refused():
    text = "template <typename T> __global__ void k(T* x) { x[0] = T(1); }\n" \
           "template <> __global__ void k(unsigned int* x) { x[0] = 2u; }\n"  # (T is two words here)
    with pytest.raises(HFuseError, match="arguments are deduced") as err:
        _kernel("k", "float", text=text)
    assert err.value.where.line == 2


HALF = """template <typename T, int kVec = 1> __global__ void fill(T* out) { out[0] = T(kVec); }
template <> __global__ void fill<__half, 2>(__half* out) { out[0] = __float2half(9.f); }
template <> __global__ void fill<unsigned int>(unsigned* out) { out[0] = 7u; }
"""


@pytest.mark.parametrize("args, body", [
    (("half", "2"), "9.f"),  # CUDA's typedef of __half
    (("__half", "1 + 1"), "9.f"),  # an expression of the same value
    (("unsigned",), "7u"),  # another spelling of unsigned int
    (("float", "2"), "T(kVec)"),  # provably another instance: the primary
    (("__half", "3"), "T(kVec)"),
])
def test_an_instance_is_matched_by_meaning_where_hfuse_can_tell(args, body):
    assert body in _kernel("fill", *args, text=HALF).text


def test_an_instance_hfuse_cannot_tell_apart_is_refused():
    with pytest.raises(HFuseError, match=r"cannot tell whether fill<MyHalf, 2> is the instance"):
        _kernel("fill", "MyHalf", "2", text=HALF)


def test_arguments_hfuse_cannot_compare_are_asked_of_the_compiler():
    # mmcv's bbox_overlaps: template <> __global__ void k<at::Half>, asked for k<float>: PyTorch's
    # headers say what at::Half is, so only a C++ compiler can tell (Clang, in hfuse.api)
    asked = []

    def alike(kernel, pairs):
        asked.extend(pairs)
        return [{a, b} == {"MyHalf", "__half"} for a, b, _ in pairs]

    path = Path("k.cu")
    program = Program([model_source(path, HALF)])
    assert "9.f" in program.kernel("fill", path, ("MyHalf", "2"), alike=alike).text
    assert asked == [("__half", "MyHalf", True)]  # (the specialisation's argument first; 2 == 2 needs no one)
    assert "T(kVec)" in program.kernel("fill", path, ("MyFloat", "2"), alike=alike).text  # not alike: the primary
    with pytest.raises(HFuseError, match=r"cannot tell whether fill<MyHalf, 2> is the instance"):
        program.kernel("fill", path, ("MyHalf", "2"), alike=lambda kernel, pairs: [None for _ in pairs])


DECLARED = """namespace lib {
template <typename T>
__global__ void copy(T* out, const T* in);

template <> __global__ void copy<float>(float* out, const float* in) { out[0] = in[0] * 2.f; }
template <> __global__ void copy<int>(int* out, const int* in) { out[0] = in[0] + 1; }
}
"""


def test_a_template_only_declared_runs_its_explicit_specialisations():
    # DeepSpeed's transform_kernels.cu declares each kernel template and defines its instances
    assert "in[0] * 2.f" in _kernel("lib::copy", "float", text=DECLARED).text
    assert "in[0] + 1" in _kernel("copy", "int", text=DECLARED).text


def test_a_template_only_declared_has_no_instance_of_its_own():
    with pytest.raises(HFuseError, match=r"'lib::copy' is only declared at line 2; of its explicit specialisations "
                                         r"\(copy<float>, copy<int>\) none is for <double>"):
        _kernel("lib::copy", "double", text=DECLARED)
