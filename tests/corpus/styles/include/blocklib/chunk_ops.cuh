// An installed library's chunk functors and activations (kept as an #include, given with
// -isystem), written to be handed to the user's kernel templates: the code that reads the
// block runs where the kernel calls its template parameter.
#pragma once

namespace blocklib {

// one chunk per block, its threads striding over it (apex's and PyTorch's optimiser functors)
struct ScaleChunk {
  float factor;
  __device__ void operator()(int chunk, int chunk_size, float* p, int n) const {
    const int begin = chunk * chunk_size;
    const int end = min(begin + chunk_size, n);
    for (int i = begin + static_cast<int>(threadIdx.x); i < end; i += blockDim.x) p[i] *= factor;
  }
};

// an activation that reads the thread's place in the block (dropout-like, alternating lanes)
__device__ inline float lane_bias(const float& x) { return x + 0.5f * static_cast<float>(threadIdx.x & 1u); }

}  // namespace blocklib
