// An installed library's generic lambdas, as CuTe writes them (transform_layout(shape, stride,
// [](auto const& s, auto const& d) { return upcast<N>(s, d); })): each lambda handed to a
// function of the library that calls it. Given with -isystem, hfuse keeps this header.
#pragma once

namespace fakelib {

template <class F, class T>
__device__ auto apply(F f, T v) { return f(v); }

// a generic lambda whose body reads threadIdx: what runs is the instance apply's call makes
template <class T>
__device__ T plus_thread(T v) { return apply([](auto x) { return x + static_cast<T>(threadIdx.x); }, v); }

// a generic lambda that reads nothing of the block
template <class T>
__device__ T doubled(T v) { return apply([](auto x) { return x + x; }, v); }

// one whose body, read as written, calls through a template parameter (Op::of): only its
// instance (Op = Twice, x an int) says what runs, and that reads nothing of the block
struct Twice {
  __device__ static int of(int v) { return 2 * v; }
};
template <class Op>
__device__ int apply_op(int v) { return Op::of(v); }
template <class Op>
__device__ int scaled(int v) { return apply([](auto x) { return apply_op<Op>(x); }, v); }

}  // namespace fakelib
