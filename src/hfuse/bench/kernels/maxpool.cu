// 2-D max pooling forward, NCHW, float32 (the paper's "Maxpool" benchmark kernel).
//
// One output element per loop iteration of a grid-stride loop over all
// nc * out_h * out_w outputs (nc = N * C planes). Each output is the maximum of its
// kernel window (with padding and dilation; padded positions never win) and its
// argmax: the flat index h * width + w within the input plane. A NaN in the window
// wins (the last NaN seen, scanning row by row); ties keep the first maximum.
//
// Output size (computed by the caller, floor mode):
//   out = (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1
//
// Works for any 1-D block size and any grid size.

#define MAXPOOL_KERNEL_LOOP(i, n)                                              \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
       i += (long long)blockDim.x * gridDim.x)

__device__ __forceinline__ bool maxpool_is_nan(float v) { return v != v; }

__device__ __forceinline__ int maxpool_min(int a, int b) { return a < b ? a : b; }

__global__ void maxpool2d_forward(const float* __restrict__ input,
                                  float* __restrict__ output,
                                  long long* __restrict__ indices,
                                  int nc, int height, int width,
                                  int out_h, int out_w,
                                  int kernel_h, int kernel_w,
                                  int stride_h, int stride_w,
                                  int pad_h, int pad_w,
                                  int dilation_h, int dilation_w) {
  const long long plane_out = (long long)out_h * out_w;
  const long long total = (long long)nc * plane_out;
  MAXPOOL_KERNEL_LOOP(index, total) {
    const long long plane = index / plane_out;
    const int rem = (int)(index - plane * plane_out);
    const int ow = rem % out_w;
    const int oh = rem / out_w;

    int hstart = oh * stride_h - pad_h;
    int wstart = ow * stride_w - pad_w;
    const int hend = maxpool_min(hstart + (kernel_h - 1) * dilation_h + 1, height);
    const int wend = maxpool_min(wstart + (kernel_w - 1) * dilation_w + 1, width);
    while (hstart < 0) hstart += dilation_h;
    while (wstart < 0) wstart += dilation_w;

    const float* in_plane = input + plane * ((long long)height * width);
    float best = __int_as_float(0xff800000);  // -infinity
    int best_idx = hstart * width + wstart;
    for (int h = hstart; h < hend; h += dilation_h) {
      for (int w = wstart; w < wend; w += dilation_w) {
        const int idx = h * width + w;
        const float v = in_plane[idx];
        if (v > best || maxpool_is_nan(v)) {
          best = v;
          best_idx = idx;
        }
      }
    }
    output[index] = best;
    indices[index] = (long long)best_idx;
  }
}
