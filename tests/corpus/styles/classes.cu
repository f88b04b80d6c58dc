// Class templates with static member functions, CRTP, an anonymous namespace with static
// helpers, a using-directive at file scope, nested namespaces (C++17), operator overloads.
#include <cstdint>

namespace lib::detail {
template <typename Derived>
struct OpBase {
  __device__ float run(float v) const { return static_cast<const Derived*>(this)->apply(v) + 1.0f; }
};
struct Doubler : OpBase<Doubler> {
  __device__ float apply(float v) const { return 2.0f * v; }
};
template <int kBits>
struct Mask {
  static constexpr uint32_t value = (1u << kBits) - 1u;
  __device__ static uint32_t apply(uint32_t v) { return v & value; }
};
}  // namespace lib::detail

using namespace lib::detail;

namespace {
static __device__ __forceinline__ uint32_t rotl(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
__device__ uint32_t mix(uint32_t h) {
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  return rotl(h, 5);
}
}  // namespace

struct Complex {
  float re, im;
  __device__ Complex operator*(const Complex& o) const { return {re * o.re - im * o.im, re * o.im + im * o.re}; }
  __device__ Complex& operator+=(const Complex& o) {
    re += o.re;
    im += o.im;
    return *this;
  }
};

__global__ void crtp_kernel(const float* __restrict__ x, float* __restrict__ y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = Doubler{}.run(x[i]);
}

template <int kBits>
__global__ void hash_mask(const uint32_t* __restrict__ keys, uint32_t* __restrict__ out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = Mask<kBits>::apply(mix(keys[i]));
}

__global__ void complex_mac(const Complex* __restrict__ a, const Complex* __restrict__ b, Complex* __restrict__ c,
                            int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] += a[i] * b[i];
}
