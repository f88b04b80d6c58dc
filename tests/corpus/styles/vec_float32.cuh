#pragma once
// float specialisations of vec_generic.cuh's templates, in a header of their own (some
// deduced: `template <> float2 mul(float2, float2)`).
#include "vec_generic.cuh"
namespace attn {
template <> struct Vec<float, 1> { using Type = float; };
template <> struct Vec<float, 2> { using Type = float2; };
template <> struct Vec<float, 4> { using Type = float4; };
template <> struct FloatVec<float> { using Type = float; };
template <> struct FloatVec<float2> { using Type = float2; };
template <> struct FloatVec<float4> { using Type = float4; };

template <> inline __device__ float mul<float, float>(float a, float b) { return a * b; }
template <> inline __device__ float2 mul(float2 a, float2 b) { float2 c; c.x = a.x * b.x; c.y = a.y * b.y; return c; }
template <> inline __device__ float4 mul(float4 a, float4 b) {
  float4 c; c.x = a.x * b.x; c.y = a.y * b.y; c.z = a.z * b.z; c.w = a.w * b.w; return c;
}
template <> inline __device__ float sum(float v) { return v; }
template <> inline __device__ float sum(float2 v) { return v.x + v.y; }
template <> inline __device__ float sum(float4 v) { return v.x + v.y + v.z + v.w; }
}  // namespace attn
