// A type the kernel uses whose host members NVRTC cannot compile: a host-only constructor
// (FlashInfer's uint_fastdiv computes its magic numbers so), a host-only static factory,
// and a constexpr host member device code calls under --expt-relaxed-constexpr; beside a
// member declared __device__ and defined outside its class.
#include <cstdint>

struct Divider {
  uint32_t d;
  __host__ __device__ explicit Divider(uint32_t divisor) : d(divisor ? divisor : 1) {}
  __host__ Divider() : d(1) {}
  __host__ static Divider from_env(uint32_t fallback);
  __host__ constexpr uint32_t bias() const { return 3u; }
  __device__ uint32_t div(uint32_t n) const { return n / d + bias(); }
};

Divider Divider::from_env(uint32_t fallback) { return Divider(fallback); }

// defined outside unannotated: __host__ __device__, as its __device__ declaration makes it
struct Step {
  uint32_t by;
  __device__ uint32_t after(uint32_t v) const;
};
uint32_t Step::after(uint32_t v) const { return v + by; }

__global__ void divide(const uint32_t* in, uint32_t* out, uint32_t divisor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  const Divider q(divisor);
  if (i < n) out[i] = Step{5u}.after(q.div(in[i]));
}
