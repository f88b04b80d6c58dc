"""GPU twin of the library-header shapes of test_fuse_real_cpp.py: each fused after the
trivial partner computes bit for bit what it computes alone, compiled as ``hfuse tune``
compiles it (NVRTC): a member template called without ``template`` (read by Clang as
amended), the same in a kept library header, a kernel of a header read as the user's own
(-I), a class with host members, an overload set a using-declaration completes, a helper's
tile of a file-scope constexpr size (its meta_group_rank counted from the part's first warp),
a block reduction through a member of an ``auto`` object (DeepSpeed's quantisation shape), a
kernel template only declared and run as its explicit specialisation, a block scan of the
user's own made through a traits struct's member alias (mamba's selective scan), row statistics
through Stats classes whose member aliases shadow the templates they name and whose reducer
member the user's initialiser list makes (flash-attn's layer norm), and a kernel instance
that a specialisation spelled with a library's alias of float is (mmcv's ``k<at::Half>`` shape)."""
from __future__ import annotations

import numpy as np
import pytest

from hfuse.api import fuse
from hfuse.frontend.options import CompileOptions
from hfuse.spec import Dim3, KernelSpec

from corpus import cases as C
from gpu_harness import Launch, cdiv, differences

pytestmark = pytest.mark.gpu

N = 1 << 14
REAL_CPP = C.CORPUS / "real_cpp"
PARTNER = KernelSpec(C.CORPUS / "styles" / "partner.cu", "axpy", Dim3(96))


@pytest.fixture(scope="module")
def cp():
    return pytest.importorskip("cupy")


def _partner(rng, cp) -> Launch:
    x, y = (cp.asarray(rng.standard_normal(N, dtype=np.float32)) for _ in range(2))
    return Launch([x, y, np.float32(1.5), np.int32(N)], Dim3(cdiv(N, 96)), 0, (1,))


def _apply4(rng, cp) -> Launch:
    x = cp.asarray(rng.standard_normal(N).astype(np.float16))
    return Launch([x, cp.zeros(N, dtype=np.float32), np.int32(N)], Dim3(cdiv(N // 4, 128)), 0, (1,))


def _scale(rng, cp) -> Launch:
    return Launch([cp.asarray(rng.standard_normal(N, dtype=np.float32)), np.float32(0.75), np.int32(N)],
                  Dim3(cdiv(N, 256)), 0, (0,))


def _half_scale(rng, cp) -> Launch:
    x = cp.asarray(rng.standard_normal(N).astype(np.float16))
    return Launch([x, cp.zeros(N, dtype=np.float16), np.float32(0.5), np.int32(N)], Dim3(cdiv(N // 8, 128)), 0, (1,))


def _divide(rng, cp) -> Launch:
    data = cp.asarray(rng.integers(0, 1 << 30, N, dtype=np.uint32))
    return Launch([data, cp.zeros(N, dtype=np.uint32), np.uint32(7), np.int32(N)], Dim3(cdiv(N, 128)), 0, (1,))


def _mixed(rng, cp) -> Launch:
    return Launch([cp.zeros(N, dtype=np.float32), cp.asarray(rng.integers(-5000, 5000, N, dtype=np.int32)),
                   np.int32(N)], Dim3(cdiv(N, 128)), 0, (0,))


def _tile_sums(rng, cp) -> Launch:
    return Launch([cp.asarray(rng.standard_normal(N, dtype=np.float32)), cp.zeros(N // 16, dtype=np.float32)],
                  Dim3(N // 128), 0, (1,))


def _quantize_rows(rng, cp) -> Launch:
    rows = N // (128 * 4)
    return Launch([cp.asarray(rng.standard_normal(N, dtype=np.float32)), cp.zeros(N, dtype=np.int8),
                   cp.zeros(rows, dtype=np.float32)], Dim3(rows), 0, (1, 2))


def _row_scales(rng, cp) -> Launch:
    rows = N // (128 * 4)
    return Launch([cp.asarray(rng.standard_normal(N, dtype=np.float32)), cp.zeros(rows, dtype=np.float32)],
                  Dim3(rows), 0, (1,))


def _scale_floats(rng, cp) -> Launch:
    return Launch([cp.zeros(N, dtype=np.float32), cp.asarray(rng.standard_normal(N, dtype=np.float32)),
                   np.float32(1.25), np.int32(N)], Dim3(cdiv(N // 4, 128)), 0, (0,))


def _suffix_scan(rng, cp) -> Launch:
    x = cp.asarray(rng.integers(-8, 8, N).astype(np.float16))  # (integers: sums exact in any order)
    return Launch([x, cp.zeros(N, dtype=np.float32), np.int32(N - 5)], Dim3(cdiv(N, 128)), 128 * 4, (1,))


def _row_norm(rng, cp) -> Launch:
    rows, cols = N // 128, 100  # (a row a block; 28 threads of each hold no column)
    x = cp.asarray(rng.standard_normal(rows * cols).astype(np.float16))
    return Launch([x, cp.zeros(rows * cols, dtype=np.float16), cp.zeros(2 * rows, dtype=np.float32), np.int32(cols)],
                  Dim3(rows), 0, (1, 2))


def _box_areas(rng, cp) -> Launch:
    wh = cp.asarray(rng.standard_normal(2 * N, dtype=np.float32))  # (negative sizes: the specialisation clamps)
    return Launch([wh, cp.zeros(N, dtype=np.float32), np.int32(N)], Dim3(cdiv(N, 128)), 0, (1,))


CASES = {
    "lenient-apply4": (KernelSpec(REAL_CPP / "lenient.cu", "apply4", Dim3(128), ("__half", "twice")), _apply4,
                       CompileOptions()),
    "header-kernel": (KernelSpec(REAL_CPP / "library_kernels.cu", "fakelib::scale_kernel", Dim3(256), ("float",)),
                      _scale, CompileOptions.from_flags(include_dirs=[str(REAL_CPP / "sysinclude")])),
    "kept-header-casts": (KernelSpec(REAL_CPP / "library_casts.cu", "scale_half", Dim3(128), ("8",)), _half_scale,
                          CompileOptions.from_flags(system_include_dirs=[str(REAL_CPP / "sysinclude")])),
    "host-members": (KernelSpec(REAL_CPP / "host_members.cu", "divide", Dim3(128)), _divide,
                     CompileOptions.from_flags(language_flags=["--expt-relaxed-constexpr"])),
    "helper-tile-constexpr": (KernelSpec(REAL_CPP / "cg_constexpr.cu", "tile_sums", Dim3(128)), _tile_sums,
                              CompileOptions()),
    "member-reduction": (KernelSpec(REAL_CPP / "member_reductions.cu", "qlib::quantize_rows", Dim3(128)),
                         _quantize_rows, CompileOptions()),
    "context-type-qualified": (KernelSpec(REAL_CPP / "member_reductions.cu", "row_scales", Dim3(128),
                                          ("qlib::Kind::Symmetric",)), _row_scales, CompileOptions()),
    "declared-template-specialised": (KernelSpec(REAL_CPP / "declared_specialisations.cu", "scale_rows", Dim3(128),
                                                 ("float",)), _scale_floats, CompileOptions()),
    "overload-set": (KernelSpec(REAL_CPP / "overload_sets.cu", "ops::mixed", Dim3(128)), _mixed, CompileOptions()),
    "traits-alias-scan": (KernelSpec(REAL_CPP / "traits_aliases.cu", "suffix_scan_kernel", Dim3(128),
                                     ("Scan_kernel_traits<128, __half>",)), _suffix_scan, CompileOptions()),
    "row-stats-classes": (KernelSpec(REAL_CPP / "row_stats.cu", "row_norm_kernel", Dim3(128),
                                     ("Norm_traits<float, 4>",)), _row_norm, CompileOptions()),
    "spelled-specialisation": (KernelSpec(REAL_CPP / "spelled_specialisations.cu", "box_areas", Dim3(128),
                                          ("float",)), _box_areas, CompileOptions()),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("second", [True, False], ids=["second", "first"])
def test_fused_with_the_partner_equals_unfused(cp, name, second):
    spec, make, options = CASES[name]
    specs, makers = ([PARTNER, spec], [_partner, make]) if second else ([spec, PARTNER], [make, _partner])
    fused = fuse(specs, options=options)
    problems = differences(cp, specs, makers, fused, [20261127, len(name), second], options=options)
    assert not problems, f"{name}:\n  " + "\n  ".join(problems)
