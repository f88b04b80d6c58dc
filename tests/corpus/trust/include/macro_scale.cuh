// A user header whose helper depends on a macro each file's build defines differently
// (-DROW_SCALE=2.0f for one, -DROW_SCALE=3.0f for the other): read by two parts, it
// defines 'row_scaled' two ways, and each part must call its own file's.
#pragma once
#ifndef ROW_SCALE
#error "ROW_SCALE must be defined by the build"
#endif
__device__ inline float row_scaled(float v) { return ROW_SCALE * v; }
