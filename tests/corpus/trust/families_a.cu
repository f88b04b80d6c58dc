// Class templates with specialisations that families_b.cu writes differently under the same
// names, as two CUDA samples each bring their own SharedMemory<T>: compiled apart, each
// file's kernel chose among its own file's family. Once refused ("defines 'SharedMemory'
// once more ..."); now each part gets its own renamed family.
template <class T>
struct SharedMemory {
  __device__ inline operator T*() {
    extern __shared__ int __smem[];
    return (T*)__smem;
  }
  __device__ inline operator const T*() const {
    extern __shared__ int __smem[];
    return (T*)__smem;
  }
};

template <>
struct SharedMemory<double> {
  __device__ inline operator double*() {
    extern __shared__ double __smem_d[];
    return (double*)__smem_d;
  }
};

// a traits family whose primary is only declared: Scale<float> is 2 here, 3 in families_b.cu
template <typename T> struct Scale;
template <> struct Scale<float> { static constexpr float value = 2.f; };
template <> struct Scale<double> { static constexpr double value = 4.0; };

template <class T>
__global__ void block_sums_a(const T* x, T* out, int n) {
  T* s = SharedMemory<T>();
  const unsigned tid = threadIdx.x;
  const int i = blockIdx.x * blockDim.x + tid;
  s[tid] = i < n ? x[i] * Scale<T>::value : T(0);
  __syncthreads();
  for (unsigned k = blockDim.x / 2; k > 0; k >>= 1) {
    if (tid < k) s[tid] += s[tid + k];
    __syncthreads();
  }
  if (tid == 0) out[blockIdx.x] = s[0];
}
template __global__ void block_sums_a<float>(const float*, float*, int);
