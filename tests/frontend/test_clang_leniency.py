"""The user's texts as Clang reads them: amended where nvcc accepts what Clang does not."""
from __future__ import annotations

import pytest

from hfuse.frontend import clang as clang_module
from hfuse.frontend.clang_leniency import with_template_keywords
from hfuse.frontend.options import CompileOptions

pytest.importorskip("clang.cindex", reason="libclang (the libclang-ng wheel) is not installed")
if isinstance(clang_module.clang_arguments(CompileOptions()), str):
    pytest.skip(f"Clang cannot read CUDA here: {clang_module.clang_arguments(CompileOptions())}",
                allow_module_level=True)

SOURCE = """template <typename T> struct cast_to {
  template <int N> __device__ static void run(float* d, const T* s) { for (int i = 0; i < N; ++i) d[i] = s[i]; }
};
template <typename T, int N>
__device__ void load(float* d, const T* s) { cast_to<T>::run<N>(d, s); }
template <typename T, int N>
__device__ void load_ok(float* d, const T* s) { cast_to<T>::template run<N>(d, s); }
__global__ void k(const int* s, float* d) { load<int, 4>(d, s); load_ok<int, 2>(d, s); }
"""


def _errors(path, text):
    """Clang's errors, with the unit they belong to (a diagnostic outliving its unit crashes)."""
    ci, _ = clang_module.cindex()
    unit = ci.Index.create().parse(str(path), args=clang_module.clang_arguments(CompileOptions()),
                                   unsaved_files=[(str(path), text)])
    return unit, [d for d in unit.diagnostics if d.severity >= ci.Diagnostic.Error]


def test_template_is_written_before_the_member_template_clang_could_not_call(tmp_path):
    path = tmp_path / "cast.cu"
    unit, errors = _errors(path, SOURCE)
    assert errors, "Clang reads the call without 'template' as comparisons"
    amended = with_template_keywords(errors, {str(path): SOURCE})
    text = amended[str(path)]
    assert "cast_to<T>::template run<N>(d, s); }\ntemplate" in text  # where it was missing
    assert text.count("::template run<N>") == 2  # (the call written with it is left alone)
    assert text.count("\n") == SOURCE.count("\n")  # lines do not move: Clang's lines stay the user's
    assert not _errors(path, text)[1]

