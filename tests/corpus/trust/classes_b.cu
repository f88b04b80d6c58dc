// The same names as classes_a.cu, other definitions.
struct Vec2 {
  float x, y;
  __device__ Vec2() : x(1.f), y(1.f) {}
  __device__ Vec2(float a, float b) : x(a), y(b) {}
  __device__ Vec2 operator+(const Vec2& o) const { return Vec2(x * o.x, y * o.y); }
  __device__ static Vec2 unit() { return Vec2(2.f, 3.f); }
};
template <typename T> struct Box {
  T v;
  __device__ T get() const { return v + T(5); }
};
struct Lane { __device__ int id() const { return (threadIdx.x % 32) * 3 + 1; } };

__global__ void combine_b(float* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const Vec2 v = Vec2(data[i], 1.f) + Vec2::unit();
  data[i] = Box<float>{v.x - v.y}.get() + static_cast<float>(Lane().id());
}
