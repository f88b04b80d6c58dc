// point_transform_kernel.cu -- rigid transform of a point cloud (ICP inner step).
//
// The 3x4 transform [R | t] is the same for every point and lives in constant
// memory (set_transform).  Blocks of 256 threads, one point per thread.
#include <cstdio>
#include <cuda_runtime.h>

struct Point3 { float x, y, z; };

__constant__ float c_rigid[12];   // row-major 3x4: R in columns 0..2, t in column 3

__device__ inline float dot3(const Point3 &a, const Point3 &b) { return a.x * b.x + a.y * b.y + a.z * b.z; }

__global__ void transform_points(const Point3 *__restrict__ in, Point3 *__restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    Point3 p = in[i];
    Point3 r0 = {c_rigid[0], c_rigid[1], c_rigid[2]};
    Point3 r1 = {c_rigid[4], c_rigid[5], c_rigid[6]};
    Point3 r2 = {c_rigid[8], c_rigid[9], c_rigid[10]};
    Point3 q;
    q.x = dot3(r0, p) + c_rigid[3];
    q.y = dot3(r1, p) + c_rigid[7];
    q.z = dot3(r2, p) + c_rigid[11];
    out[i] = q;
}

// squared distance of every transformed point to its matched target point
__global__ void residuals(const Point3 *moved, const Point3 *target, const int *match, float *err2, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        Point3 a = moved[i], b = target[match[i]];
        Point3 d = {a.x - b.x, a.y - b.y, a.z - b.z};
        err2[i] = dot3(d, d);
    }
}

void set_transform(const float h_rigid[12])
{
    cudaError_t e = cudaMemcpyToSymbol(c_rigid, h_rigid, 12 * sizeof(float));
    if (e != cudaSuccess) fprintf(stderr, "set_transform: %s\n", cudaGetErrorString(e));
}
