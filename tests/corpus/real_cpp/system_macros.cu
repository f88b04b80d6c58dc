// Conditionals on macros that system headers define: nvcc's host compiler knows them, and
// so must hfuse, or a kernel vanishes or an #error fires.
#include <limits.h>
#include <unistd.h>

#ifndef UCHAR_MAX
#error "limits.h defines UCHAR_MAX"
#endif

#if defined(_POSIX_VERSION) && _POSIX_VERSION >= 200112L
__global__ void posix_path(unsigned char* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = (unsigned char)(i % UCHAR_MAX);
}
#endif

__global__ void plain(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] += 1.0f;
}
