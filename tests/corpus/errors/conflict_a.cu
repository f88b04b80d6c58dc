// Defines the struct Mix one way ...

struct Mix {
  int shift;
  __device__ int apply(int v) const;
};
__device__ int Mix::apply(int v) const { return v >> shift; }

extern "C" __global__ void conflict_a(const int* in, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  Mix m{7};
  if (i < n) out[i] = in[i] ^ m.apply(in[i]);
}
