/* nearest_centroid_kernel.cu -- label every point with its nearest centroid and
 * count the labels.
 *
 * label_points: one thread per point, ties go to the lower centroid index.
 * count_labels: a shared-memory histogram of the labels per block, flushed
 *               with one atomicAdd per bin and block.  k <= MAX_K.
 * Both run on 128-thread blocks.
 */
#include <cstdio>
#include <cfloat>
#include <cuda_runtime.h>

#define MAX_K 64

struct Point3 { float x, y, z; };

__device__ inline float dot3(const Point3 &a, const Point3 &b) { return a.x * b.x + a.y * b.y + a.z * b.z; }

__global__ void label_points(const Point3 *pts, int n, const Point3 *centroids, int k, int *label, float *dist2)
{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    Point3 p = pts[i];
    int best = 0;
    float bestD = FLT_MAX;
    for (int c = 0; c < k; ++c) {
      Point3 q = centroids[c];
      Point3 d = {p.x - q.x, p.y - q.y, p.z - q.z};
      float dd = dot3(d, d);
      if (dd < bestD) { bestD = dd; best = c; }
    }
    label[i] = best;
    dist2[i] = bestD;
  }
}

__global__ void count_labels(const int *label, int n, int *counts, int k)
{
  __shared__ int local[MAX_K];
  for (int b = threadIdx.x; b < k; b += blockDim.x) local[b] = 0;
  __syncthreads();

  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    atomicAdd(&local[label[i]], 1);
  __syncthreads();

  for (int b = threadIdx.x; b < k; b += blockDim.x)
    if (local[b]) atomicAdd(&counts[b], local[b]);
}
