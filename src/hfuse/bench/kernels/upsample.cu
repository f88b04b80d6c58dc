// Bilinear 2-D upsampling, NCHW, float32 (the paper's "Upsample" kernel).
//
// Output size is given; the scale follows from the sizes, with the source-index
// formulas of PyTorch's upsample_bilinear2d:
//   align_corners:  scale = (in - 1) / (out - 1)  (0 when out == 1),  src = scale * dst
//   otherwise:      scale = in / out,  src = max(scale * (dst + 0.5) - 0.5, 0)
// The integer part of src picks the top/left neighbour, the fraction the weights;
// the bottom/right neighbour is clamped to the last row/column.
//
// Grid-stride loop over all nc * out_h * out_w outputs; any 1-D block and grid size.

#define UPSAMPLE_KERNEL_LOOP(i, n)                                              \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
       i += (long long)blockDim.x * gridDim.x)

__device__ __forceinline__ float upsample_scale(int in_size, int out_size, bool align_corners) {
  if (align_corners) {
    return out_size > 1 ? (float)(in_size - 1) / (float)(out_size - 1) : 0.0f;
  }
  return (float)in_size / (float)out_size;
}

__device__ __forceinline__ float upsample_source_index(float scale, int dst, bool align_corners) {
  if (align_corners) {
    return scale * (float)dst;
  }
  const float src = scale * ((float)dst + 0.5f) - 0.5f;
  return src < 0.0f ? 0.0f : src;
}

__global__ void upsample_bilinear2d(const float* __restrict__ input,
                                    float* __restrict__ output,
                                    int nc, int in_h, int in_w,
                                    int out_h, int out_w,
                                    int align_corners) {
  const bool align = align_corners != 0;
  const float scale_h = upsample_scale(in_h, out_h, align);
  const float scale_w = upsample_scale(in_w, out_w, align);
  const long long plane_out = (long long)out_h * out_w;
  const long long total = (long long)nc * plane_out;

  UPSAMPLE_KERNEL_LOOP(index, total) {
    const long long plane = index / plane_out;
    const int rem = (int)(index - plane * plane_out);
    const int ow = rem % out_w;
    const int oh = rem / out_w;

    const float h_real = upsample_source_index(scale_h, oh, align);
    const int h0 = (int)h_real;
    const int h_step = h0 < in_h - 1 ? in_w : 0;
    const float h1_weight = h_real - (float)h0;
    const float h0_weight = 1.0f - h1_weight;

    const float w_real = upsample_source_index(scale_w, ow, align);
    const int w0 = (int)w_real;
    const int w_step = w0 < in_w - 1 ? 1 : 0;
    const float w1_weight = w_real - (float)w0;
    const float w0_weight = 1.0f - w1_weight;

    const float* p = input + plane * ((long long)in_h * in_w) + (h0 * in_w + w0);
    const float top = w0_weight * p[0] + w1_weight * p[w_step];
    const float bottom = w0_weight * p[h_step] + w1_weight * p[h_step + w_step];
    output[index] = h0_weight * top + h1_weight * bottom;
  }
}
