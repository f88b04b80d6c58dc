// Names the closure once dropped: enum constants used without their type name (plain and
// in a namespace), a file-scope static_assert kept without the typedef it names.
enum Mode { MODE_ADD = 1, MODE_MUL = 2 };
namespace lib { enum Op : int { OP_NEG = 3, OP_ABS = 4 }; }
typedef float real_t;
static_assert(sizeof(real_t) == 4, "real_t must be 4 bytes");
__global__ void k(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = out[i] * MODE_MUL + lib::OP_ABS;
}
__global__ void k2(float* out, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] += 1.0f; }
