#include "fwd.h"
#include "params.h"
__global__ void ka(float* out, Params p) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < p.n) out[i] = weight(p, i); }
