// The same 'nudge(float)' as overloads_a.cu, and an overload for double that computes
// something else: b.cu's float call must still run nudge(float), as compiled apart
// (once, the fused part had only its file's other definition and called the double one).
__device__ float nudge(float v) { return v + 1.0f; }
__device__ float nudge(double v) { return static_cast<float>(v) * 0.5f - 7.0f; }

__global__ void nudge_cols(float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = nudge(out[i]) + nudge(static_cast<double>(i));
}
