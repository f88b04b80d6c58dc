"""GPU twin of the name-scope shapes (``codegen/directive_scope.py``, ``frontend/program.py``):
where one input's declarations once changed what another input's code meant, the fused
kernel now computes bit for bit what each kernel computes alone.

- A kept library's ``using namespace vendor;`` (or ``using vendor::twice;``) once reached
  another input's ``twice(i)``, whose ``int`` argument then matched ``vendor::twice<int>``
  (3x) instead of its own ``twice(float)`` (2x).
- A ``.cu`` file's explicit specialisation of its header's function or class template, beside
  a file that runs the primary: each part chooses among its own file's definitions (once,
  the specialisation alone was refused as "defined differently").
- A variable template two files define with other values: one per part.
- A file's global ``struct Shape`` beside another file's ``using namespace vendor;`` whose
  ``Shape<4>`` is the library's: once an ambiguity nvcc refused; now the first file's part
  has its Shape under a name of its own, and the second's still means vendor's; a
  constant of the first file given as a template argument (``-k 'tiled<kTile>'``) names
  that part's copy (once, after vendor's directive, it instantiated with vendor's).
"""
from __future__ import annotations

import numpy as np
import pytest

from hfuse.api import fuse
from hfuse.frontend.options import CompileOptions
from hfuse.spec import Dim3, KernelSpec

from gpu_harness import Launch, cdiv, differences

pytestmark = pytest.mark.gpu

N = 1 << 14


@pytest.fixture(scope="module")
def cp():
    return pytest.importorskip("cupy")


def _ints(rng, cp) -> Launch:  # (const int* in, float* out, int n)
    return Launch([cp.asarray(rng.integers(-1000, 1000, N, dtype=np.int32)), cp.zeros(N, np.float32), np.int32(N)],
                  Dim3(cdiv(N, 128)), 0, (1,))


def _floats(rng, cp) -> Launch:  # (float* out, const float* in, int n)
    return Launch([cp.zeros(N, np.float32), cp.asarray(rng.standard_normal(N, dtype=np.float32)), np.int32(N)],
                  Dim3(cdiv(N, 128)), 0, (0,))


def _clamped(rng, cp) -> Launch:  # (const float* in, float* out, int n)
    return Launch([cp.asarray(rng.standard_normal(N, dtype=np.float32)), cp.zeros(N, np.float32), np.int32(N)],
                  Dim3(cdiv(N, 128)), 0, (1,))


def _written(rng, cp) -> Launch:  # (float* out, int n)
    return Launch([cp.zeros(N, np.float32), np.int32(N)], Dim3(cdiv(N, 128)), 0, (0,))


VENDOR = """#pragma once
namespace vendor {
template <class T> __host__ __device__ T twice(T x) { return 3 * x; }
template <class T> __host__ __device__ T clamp01(T x) { return x < T(0) ? T(0) : (x > T(1) ? T(1) : x); }
}
"""


@pytest.mark.parametrize("namespace", ["", "kern"])
@pytest.mark.parametrize("form", ["using namespace vendor;", "using vendor::clamp01;\nusing vendor::twice;"])
@pytest.mark.parametrize("first", ["plain", "vendored"])
def test_a_kept_librarys_directive_reaches_only_its_own_files_code(cp, tmp_path, first, form, namespace):
    # (namespace: both kernels, and the directive, inside 'namespace kern { }')
    opened, closed = (f"namespace {namespace} {{\n", "}\n") if namespace else ("", "")
    (tmp_path / "sys" / "vendor").mkdir(parents=True)
    (tmp_path / "sys" / "vendor" / "ops.h").write_text(VENDOR)
    (tmp_path / "plain.cu").write_text(
        f"__device__ float twice(float x) {{ return 2.0f * x; }}\n{opened}"
        "__global__ void doubled(const int* in, float* out, int n) {\n"
        f"  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = twice(in[i]);\n}}\n{closed}")
    (tmp_path / "vendored.cu").write_text(
        f"#include <vendor/ops.h>\n{opened}{form}\n"
        "__global__ void clamped(const float* in, float* out, int n) {\n"
        f"  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = clamp01(in[i]);\n}}\n{closed}")
    prefix = f"{namespace}::" if namespace else ""
    kernels = [(KernelSpec(tmp_path / "plain.cu", f"{prefix}doubled", 128), _ints),
               (KernelSpec(tmp_path / "vendored.cu", f"{prefix}clamped", 128), _clamped)]
    if first == "vendored":
        kernels.reverse()
    options = CompileOptions(system_include_dirs=(tmp_path / "sys",))
    fused = fuse([s for s, _ in kernels], options=options)
    problems = differences(cp, [s for s, _ in kernels], [m for _, m in kernels], fused, [20261127, 1],
                           flags=[f"-I{tmp_path / 'sys'}"], options=options)
    assert not problems, problems


def test_each_part_runs_its_own_files_specialisation_or_primary(cp, tmp_path):
    (tmp_path / "shared.cuh").write_text("#pragma once\ntemplate <class T> __device__ T bias() { return T(1); }\n")
    body = "{ int t = blockIdx.x * blockDim.x + threadIdx.x; if (t < n) o[t] = bias<float>(); }\n"
    (tmp_path / "a.cu").write_text('#include "shared.cuh"\ntemplate <> __device__ float bias<float>() { return 2.f; }\n'
                                   f"__global__ void ka(float* o, int n) {body}")
    (tmp_path / "b.cu").write_text(f'#include "shared.cuh"\n__global__ void kb(float* o, int n) {body}')
    specs = [KernelSpec(tmp_path / "a.cu", "ka", 128), KernelSpec(tmp_path / "b.cu", "kb", 128)]
    problems = differences(cp, specs, [_written, _written], fuse(specs), [20261127, 2], flags=[f"-I{tmp_path}"])
    assert not problems, problems


def test_each_part_reads_its_own_files_class_template_specialisation_or_primary(cp, tmp_path):
    (tmp_path / "traits.cuh").write_text("#pragma once\ntemplate <class T> struct Traits { static constexpr int v = 1; };\n")
    body = "{ int t = blockIdx.x * blockDim.x + threadIdx.x; if (t < n) o[t] = Traits<float>::v + Traits<int>::v; }\n"
    (tmp_path / "a.cu").write_text('#include "traits.cuh"\ntemplate <> struct Traits<float> { static constexpr int v = 2; };\n'
                                   f"__global__ void ka(float* o, int n) {body}")
    (tmp_path / "b.cu").write_text(f'#include "traits.cuh"\n__global__ void kb(float* o, int n) {body}')
    specs = [KernelSpec(tmp_path / "a.cu", "ka", 128), KernelSpec(tmp_path / "b.cu", "kb", 128)]
    problems = differences(cp, specs, [_written, _written], fuse(specs), [20261127, 4], flags=[f"-I{tmp_path}"])
    assert not problems, problems


def test_each_part_reads_its_own_files_variable_template(cp, tmp_path):
    for name, kernel, value in (("a.cu", "ka", "T(2)"), ("b.cu", "kb", "T(3)")):
        (tmp_path / name).write_text(
            f"template <class T> constexpr T kScale = {value};\n"
            "template <class T> __device__ T scaled(T x) { return x * kScale<T>; }\n"
            f"__global__ void {kernel}(float* o, const float* i, int n) {{\n"
            "  int t = blockIdx.x * blockDim.x + threadIdx.x;\n  if (t < n) o[t] = scaled(i[t]);\n}\n")
    specs = [KernelSpec(tmp_path / "a.cu", "ka", 128), KernelSpec(tmp_path / "b.cu", "kb", 128)]
    problems = differences(cp, specs, [_floats, _floats], fuse(specs), [20261127, 3])
    assert not problems, problems


def test_a_global_type_beside_another_inputs_library_directive_keeps_each_meaning(cp, tmp_path):
    (tmp_path / "sys" / "vendor").mkdir(parents=True)
    (tmp_path / "sys" / "vendor" / "shapes.h").write_text(
        "#pragma once\nnamespace vendor { template <int M> struct Shape { static constexpr int size = M; }; }\n")
    (tmp_path / "a.cu").write_text(
        "struct Shape { int m, n; };\n__device__ int area(Shape s) { return s.m * s.n; }\n"
        "__global__ void shaped(float* o, int n) {\n  int t = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (t < n) o[t] = float(area(Shape{t % 7, 3}));\n}\n")
    (tmp_path / "b.cu").write_text(
        "#include <vendor/shapes.h>\nusing namespace vendor;\n__global__ void sized(float* o, int n) {\n"
        "  int t = blockIdx.x * blockDim.x + threadIdx.x;\n  if (t < n) o[t] = float(Shape<4>::size * t);\n}\n")
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "sys")])
    kernels = [KernelSpec(tmp_path / "a.cu", "shaped", 128), KernelSpec(tmp_path / "b.cu", "sized", 128)]
    for specs in (kernels, kernels[::-1]):
        fused = fuse(specs, options=options)
        assert "Shape__hf" in fused.source
        problems = differences(cp, specs, [_written, _written], fused, [20261127, 5], options=options)
        assert not problems, problems


def test_a_constant_template_argument_is_the_parts_own_beside_a_library_directive(cp, tmp_path):
    # once silently wrong: tiled<kTile> ran with vendor's kTile (8) instead of its file's (4)
    (tmp_path / "sys" / "vendor").mkdir(parents=True)
    (tmp_path / "sys" / "vendor" / "tile.h").write_text("#pragma once\nnamespace vendor { constexpr int kTile = 8; }\n")
    (tmp_path / "a.cu").write_text(
        "constexpr int kTile = 4;\ntemplate <int T>\n__global__ void tiled(float* o, int n) {\n"
        "  int t = blockIdx.x * blockDim.x + threadIdx.x;\n  if (t < n) o[t] = float(T * t);\n}\n")
    (tmp_path / "b.cu").write_text(
        "#include <vendor/tile.h>\nusing namespace vendor;\n__global__ void kb(float* o, int n) {\n"
        "  int t = blockIdx.x * blockDim.x + threadIdx.x;\n  if (t < n) o[t] = float(kTile + t);\n}\n")
    options = CompileOptions.from_flags(system_include_dirs=[str(tmp_path / "sys")])
    kernels = [KernelSpec(tmp_path / "a.cu", "tiled", 128, template_args=("kTile",)),
               KernelSpec(tmp_path / "b.cu", "kb", 128)]
    for specs in (kernels, kernels[::-1]):
        problems = differences(cp, specs, [_written, _written], fuse(specs, options=options), [20261127, 6],
                               options=options)
        assert not problems, problems
