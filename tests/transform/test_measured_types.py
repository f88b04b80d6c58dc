"""Function templates that measure or cast to a type parameter a block-reading type may
reach (``measured_types.py``): refused where the part gives them such a type, explicitly,
deduced from an object, or passed on by another template; fused where only plain types
reach them."""
from __future__ import annotations

import re

import pytest

from hfuse.api import fuse
from hfuse.errors import HFuseError
from hfuse.spec import Dim3, KernelSpec

from toolchain import compile_nvcc

OTHER = "__global__ void other(float* y) { y[threadIdx.x] = 1.f; }\n"

MEASURING = """
struct LaneFn { __device__ float operator()(float x) const { return x + threadIdx.x; } };
template <class F> __device__ float call(F f, float x) { return f(x) + 1.f; }
template <class F> __device__ float measure(F f, float x) { return f(x) + sizeof(F); }
template <class F> __device__ float measure_object(const F& f, float x) { return f(x) + sizeof(f); }
template <class T> __device__ float load(const T* p) { return p[0] * sizeof(T); }
template <class F> __device__ F* carve(char* p) { return reinterpret_cast<F*>(p); }
__global__ void k_call(float* o) { o[threadIdx.x] = call<LaneFn>(LaneFn{}, 1.f) + load(o); }
__global__ void k_measure(float* o) { o[threadIdx.x] = measure<LaneFn>(LaneFn{}, 1.f); }
__global__ void k_deduced(float* o) { o[threadIdx.x] = measure(LaneFn{}, 1.f); }
__global__ void k_object(float* o) { LaneFn f; o[threadIdx.x] = measure_object(f, 1.f); }
__global__ void k_carved(float* o) { extern __shared__ char raw[]; o[threadIdx.x] = (*carve<LaneFn>(raw))(1.f); }
template <class G> __device__ float forward(const G& g, float x) { G copy = g; return measure(copy, x); }
__global__ void k_forwarded(float* o) { o[threadIdx.x] = forward(LaneFn{}, 1.f); }
template <class F> __device__ float measure_pointer(const F* f, float x) { return (*f)(x) + sizeof(F); }
__global__ void k_pointer(float* o) { LaneFn f; const LaneFn* p = &f; o[threadIdx.x] = measure_pointer(&f, 1.f) + measure_pointer(p, 2.f); }
__global__ void k_auto(float* o) { auto f = LaneFn{}; const auto& g = f; o[threadIdx.x] = measure(g, 1.f); }
template <class U> __device__ void stats(const U* v, U& mu, U* buf) { mu = v[0]; ((U*)buf)[0] = mu * sizeof(U); }
__global__ void k_plain(float* o) { float mu; LaneFn f; stats(o, mu, o + 1); o[threadIdx.x] = f(mu); }
""" + OTHER


@pytest.mark.parametrize("kernel, what", [
    ("k_measure", "'measure' takes the size or alignment of its type parameter 'F'"),
    ("k_deduced", "'measure' takes the size or alignment of its type parameter 'F'"),
    ("k_object", "'measure_object' takes the size or alignment of its type parameter 'F'"),
    ("k_carved", "'carve' casts to its type parameter 'F'"),
    ("k_forwarded", "'measure' takes the size or alignment of its type parameter 'F'"),  # through forward<G>
    ("k_auto", "'measure' takes the size or alignment of its type parameter 'F'"),  # auto, twice
    ("k_pointer", "'measure_pointer' takes the size or alignment of its type parameter 'F'"),  # &f, and p
])
def test_a_template_that_measures_a_type_parameter_a_block_reading_type_may_reach_is_refused(kernel, what):
    # once silently wrong: measure(LaneFn{}, 1.f) deduced F as the part's copy, whose sizeof
    # is that of the view of the block it carries (8), not LaneFn's (1)
    with pytest.raises(HFuseError, match=re.escape(what) + r", and this kernel gives it a type that reads"):
        fuse([KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", kernel, Dim3(128))],
             sources={"k.cu": MEASURING})


@pytest.mark.nvcc
@pytest.mark.parametrize("kernel", ["k_call", "k_plain"])
def test_a_template_given_such_a_type_that_only_calls_it_fuses(tmp_path, kernel):
    # call<LaneFn> only calls its object; load<float> and stats<float> (Apex's
    # cuWelfordMuSigma2 casts (U*)buf) measure a type no block-reading type reaches
    fused = fuse([KernelSpec("k.cu", "other", Dim3(96)), KernelSpec("k.cu", kernel, Dim3(128))],
                 sources={"k.cu": MEASURING}).source
    assert "LaneFn__hf2" in fused
    compile_nvcc(fused, workdir=tmp_path)
