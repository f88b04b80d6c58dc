
import pytest

from hfuse.errors import HFuseError
from hfuse.transform.early_exit import make_early_exits_safe


def _safe(text: str, helpers=frozenset()) -> str:
    return make_early_exits_safe(text, set(helpers), "k.cu", 0, "k")


def test_no_barrier_means_no_change():
    text = "__global__ void k(int* a, int n) { int i = threadIdx.x; if (i >= n) return; a[i] = 1; }"
    assert _safe(text) == text


def test_return_after_the_last_barrier_is_left_alone():
    text = "__global__ void k(int* a, int n) { __syncthreads(); if (threadIdx.x >= n) return; a[0] = 1; }"
    assert _safe(text) == text


def test_guard_before_barrier_becomes_a_flag_and_every_thread_reaches_the_barrier():
    text = (
        "__global__ void k(float* a, int n) {\n"
        "  __shared__ float s[256];\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  float v = a[i];\n"
        "  s[threadIdx.x] = v;\n"
        "  __syncthreads();\n"
        "  a[i] = s[threadIdx.x ^ 1] + v;\n"
        "}\n"
    )
    out = _safe(text)
    assert "return" not in out
    assert "if (hf_active && (i >= n)) hf_active = false;" in out
    assert "float v;" in out and "v = a[i];" in out  # hoisted: used after the barrier
    before, after = out.split("__syncthreads();")
    assert before.count("if (hf_active) {") == 1 and after.count("if (hf_active) {") == 1
    assert "__syncthreads();" not in after.split("if (hf_active) {")[1]


@pytest.mark.parametrize(
    "body, why",
    [
        ("for (int j = 0; j < n; ++j) { if (a[j] < 0) return; }\n__syncthreads();", "top-level"),
        ("if (threadIdx.x >= n) return;\nfor (int j = 0; j < 4; ++j) { __syncthreads(); }", "inside a statement"),
        ("if (threadIdx.x >= n) return;\nconst float v = a[0];\n__syncthreads();\na[1] = v;", "cannot be hoisted"),
    ],
)
def test_unsafe_shapes_are_refused_with_the_line(body, why):
    text = "__global__ void k(float* a, int n) {\n" + body + "\n}\n"
    with pytest.raises(HFuseError) as err:
        _safe(text)
    assert why in str(err.value) and err.value.where.kernel == "k" and err.value.where.line is not None
