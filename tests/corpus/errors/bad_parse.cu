// A kernel that does not parse: an unbalanced parenthesis on the marked line.

extern "C" __global__ void broken(const int* in, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = (in[i] * 3 + ;  // ERROR-LINE
  }
}

extern "C" __global__ void fine(int* out) { out[threadIdx.x] = 1; }
