/* kmeans_kernel.cu -- assignment step of k-means on the GPU.
 *
 * The centroids of the current iteration are copied into constant memory by the
 * host (kmeans_upload_centroids) before every launch: all threads read the same
 * centroid element at the same time, which constant memory broadcasts.
 *
 * Features are stored feature-major (features[f * npoints + p]) so that
 * consecutive threads read consecutive addresses; kmeans_swap converts from the
 * point-major layout of the input file.
 */
#ifndef _KMEANS_KERNEL_CU_
#define _KMEANS_KERNEL_CU_

#include <stdio.h>
#include <float.h>
#include <cuda_runtime.h>

#define MAX_CLUSTERS 16
#define MAX_FEATURES 32
#define KM_THREADS 256   /* threads per block, power of two (see the delta reduction) */

__constant__ float c_centroids[MAX_CLUSTERS * MAX_FEATURES];   /* [cluster][feature] */

/* point-major -> feature-major */
__global__ void kmeans_swap(const float *in, float *out, int npoints, int nfeatures)
{
	register int p = blockIdx.x * blockDim.x + threadIdx.x;
	if (p < npoints) {
		for (register int f = 0; f < nfeatures; f++)
			out[f * npoints + p] = in[p * nfeatures + f];
	}
}

/* nearest centroid of every point; block_deltas[b] = points of block b that moved */
__global__ void kmeans_assign(const float *features,
                              int npoints,
                              int nfeatures,
                              int nclusters,
                              int *membership,
                              int *block_deltas)
{
	__shared__ int moved[KM_THREADS];

	register int p = blockIdx.x * blockDim.x + threadIdx.x;
	register int changed = 0;

	if (p < npoints) {
		register int best = 0;
		register float best_dist = FLT_MAX;
		for (register int c = 0; c < nclusters; c++) {
			register float dist = 0.0f;
			for (register int f = 0; f < nfeatures; f++) {
				float diff = features[f * npoints + p] - c_centroids[c * nfeatures + f];
				dist += diff * diff;
			}
			if (dist < best_dist) {
				best_dist = dist;
				best = c;
			}
		}
		if (membership[p] != best) {
			changed = 1;
			membership[p] = best;
		}
	}

	moved[threadIdx.x] = changed;
	__syncthreads();
	for (register int s = KM_THREADS / 2; s > 0; s >>= 1) {
		if (threadIdx.x < s)
			moved[threadIdx.x] += moved[threadIdx.x + s];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		block_deltas[blockIdx.x] = moved[0];
}

extern "C" int kmeans_upload_centroids(const float *centroids, int nclusters, int nfeatures)
{
	if (nclusters > MAX_CLUSTERS || nfeatures > MAX_FEATURES) {
		fprintf(stderr, "kmeans: at most %d clusters of %d features\n", MAX_CLUSTERS, MAX_FEATURES);
		return -1;
	}
	cudaError_t err = cudaMemcpyToSymbol(c_centroids, centroids, nclusters * nfeatures * sizeof(float));
	return err == cudaSuccess ? 0 : -1;
}

#endif /* _KMEANS_KERNEL_CU_ */
