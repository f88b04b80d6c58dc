#include "params.h"
#include "fwd.h"
__global__ void kb(float* out, Params p) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < p.n) out[i] += weight(p, i); }
