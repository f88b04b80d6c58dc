// mylib/math.cuh -- scalar helpers used by the element-wise kernels.
#pragma once

#include "config.cuh"

namespace mylib {
namespace detail {

// Not to be confused with the kernel mylib::scale (elementwise.cu): this one scales one value.
MYLIB_DEVICE float scale(float v, float a) { return v * a; }

template <typename T>
MYLIB_DEVICE T clamp(T v, T lo, T hi) { return v < lo ? lo : (v > hi ? hi : v); }

MYLIB_DEVICE float lerp(float a, float b, float t) { return a + t * (b - a); }

}  // namespace detail
}  // namespace mylib
