// mylib/shared_memory.cuh
//
// Dynamically sized shared memory of any element type.  A templated kernel cannot
// declare `extern __shared__ T s[];` for two different T in one program, so it asks
// for the buffer through this wrapper instead:
//
//     T *sdata = mylib::SharedMemory<T>();
//
#pragma once

namespace mylib {

template <class T>
struct SharedMemory {
    __device__ inline operator T *()
    {
        extern __shared__ int __smem[];
        return (T *)__smem;
    }

    __device__ inline operator const T *() const
    {
        extern __shared__ int __smem[];
        return (T *)__smem;
    }
};

// doubles need 8-byte alignment of the buffer
template <>
struct SharedMemory<double> {
    __device__ inline operator double *()
    {
        extern __shared__ double __smem_d[];
        return (double *)__smem_d;
    }

    __device__ inline operator const double *() const
    {
        extern __shared__ double __smem_d[];
        return (double *)__smem_d;
    }
};

}  // namespace mylib
