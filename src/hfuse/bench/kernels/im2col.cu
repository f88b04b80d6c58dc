// Image to columns (the lowering of a convolution to a matrix product), float32,
// for one image of shape (channels, height, width): the paper's "Im2Col" kernel.
//
// columns has shape (channels * kernel_h * kernel_w, out_h * out_w), row-major, the
// layout of Caffe's im2col and PyTorch's unfold: row (c * kernel_h + i) * kernel_w + j,
// column oy * out_w + ox holds image[c, oy * stride_h - pad_h + i * dilation_h,
// ox * stride_w - pad_w + j * dilation_w], or 0 where that lies in the padding.
// out = (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1 (given by the caller).
//
// Grid-stride loop over (c, oy, ox); each iteration writes the kernel_h * kernel_w
// values of its column position. Any 1-D block and grid size.

#define IM2COL_KERNEL_LOOP(i, n)                                                \
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
       i += (long long)blockDim.x * gridDim.x)

__global__ void im2col(const float* __restrict__ image,
                       float* __restrict__ columns,
                       int channels, int height, int width,
                       int kernel_h, int kernel_w,
                       int pad_h, int pad_w,
                       int stride_h, int stride_w,
                       int dilation_h, int dilation_w,
                       int out_h, int out_w) {
  const long long plane_out = (long long)out_h * out_w;
  const long long total = (long long)channels * plane_out;
  IM2COL_KERNEL_LOOP(index, total) {
    const int ox = (int)(index % out_w);
    const long long rest = index / out_w;
    const int oy = (int)(rest % out_h);
    const int c = (int)(rest / out_h);

    const int y0 = oy * stride_h - pad_h;
    const int x0 = ox * stride_w - pad_w;
    const float* img = image + (long long)c * height * width;
    float* col = columns + ((long long)c * kernel_h * kernel_w) * plane_out +
                 (long long)oy * out_w + ox;

    for (int i = 0; i < kernel_h; ++i) {
      const int y = y0 + i * dilation_h;
      for (int j = 0; j < kernel_w; ++j) {
        const int x = x0 + j * dilation_w;
        const bool inside = y >= 0 && x >= 0 && y < height && x < width;
        *col = inside ? img[y * width + x] : 0.0f;
        col += plane_out;
      }
    }
  }
}
