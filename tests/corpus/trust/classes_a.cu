// Classes with member functions that classes_b.cu defines differently under the same names:
// compiled apart, each file's kernel meant its own. Fused, each part gets its own copy
// (once refused: "'Vec2' is defined differently here and in ..."). Lane reads the block.
struct Vec2 {
  float x, y;
  __device__ Vec2() : x(0.f), y(0.f) {}
  __device__ Vec2(float a, float b) : x(a), y(b) {}
  __device__ Vec2 operator+(const Vec2& o) const { return Vec2(x + o.x, y + o.y); }
  __device__ static Vec2 unit() { return Vec2(1.f, 1.f); }
};
template <typename T> struct Box {
  T v;
  __device__ T get() const { return v * T(2); }
};
struct Lane { __device__ int id() const { return threadIdx.x & 31; } };

__global__ void combine_a(float* data, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const Vec2 v = Vec2(data[i], 1.f) + Vec2::unit();
  data[i] = Box<float>{v.x + v.y}.get() + static_cast<float>(Lane().id());
}
