from hfuse.frontend.preprocess import preprocess

SOURCE = """#include <cuda_runtime.h>
#define GRID_STRIDE(i, n) for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)
#define SQ(x) ((x) * (x))
__global__ void k(float* a, int n) {
#pragma unroll 4
  GRID_STRIDE(i, n) { a[i] = SQ(a[i]); }
#if __CUDA_ARCH__ >= 700
  __syncwarp();
#endif
}
"""


def test_macros_in_kernel_bodies_are_expanded():
    out = preprocess(SOURCE, "k.cu")
    assert "for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n);" in out
    assert "((a[i]) * (a[i]))" in out
    assert "GRID_STRIDE" not in out and "SQ(" not in out


def test_includes_pragmas_and_unknown_conditionals_pass_through():
    out = preprocess(SOURCE, "k.cu")
    assert "#include <cuda_runtime.h>" in out
    assert "#pragma unroll 4" in out
    assert "#if __CUDA_ARCH__ >= 700" in out and "#endif" in out


def test_line_numbers_are_preserved():
    out = preprocess(SOURCE, "k.cu").splitlines()
    assert out[3].startswith("__global__ void k(")
    assert "GRID" not in out[5] and out[5].lstrip().startswith("for (int i")
