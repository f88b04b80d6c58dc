// A kernel template as detection-op libraries write one: the primary for plain types, and
// explicit specialisations written with the library's own spellings (its 16-bit class, as
// PyTorch's at::Half is one, and its alias of float), so that only a C++ compiler can tell
// which instance each is; each calls a helper that only it uses.
#include <cuda_fp16.h>

namespace boxlib {
struct Half16 {
    __half v;
};
using real = float;
}  // namespace boxlib

__device__ __forceinline__ float area(float w, float h) { return w * h; }
__device__ __forceinline__ double area(double w, double h) { return w * h; }
__device__ __forceinline__ __half half_area(__half w, __half h) { return __hmul(w, h); }
__device__ __forceinline__ float clamped_area(float w, float h) { return fmaxf(w, 0.f) * fmaxf(h, 0.f); }

template <typename T>
__global__ void box_areas(const T* wh, T* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = area(wh[2 * i], wh[2 * i + 1]);
    }
}

// box_areas<float>, spelled with the library's alias: boxes of negative size have no area
template <>
__global__ void box_areas<boxlib::real>(const boxlib::real* wh, boxlib::real* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i] = clamped_area(wh[2 * i], wh[2 * i + 1]);
    }
}

template <>
__global__ void box_areas<boxlib::Half16>(const boxlib::Half16* wh, boxlib::Half16* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        out[i].v = half_area(wh[2 * i].v, wh[2 * i + 1].v);
    }
}
