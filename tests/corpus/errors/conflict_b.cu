// ... and this file defines it another way: fusing conflict_a with conflict_b is refused
// (two structs of one name with a member function defined outside them; plain types,
// classes with their members written in them, typedefs, constants and functions of one
// name are renamed per part instead).

struct Mix {  // ERROR-LINE
  int scale, offset;
  __device__ int apply(int v) const;
};
__device__ int Mix::apply(int v) const { return v * scale + offset; }

extern "C" __global__ void conflict_b(const int* in, int* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  Mix m{31, 7};
  if (i < n) out[i] = m.apply(in[i]) + 1;
}
