/*
 * gauss_elim_kernel.cu -- forward elimination of a dense n x n system A x = b,
 * one pivot p per pair of launches:
 *
 *   gauss_pivot_column   mult[r][p] = a[r][p] / a[p][p] for every row r > p
 *                        (1-D, MAXBLOCKSIZE threads per block)
 *   gauss_update         a[r][c] -= mult[r][p] * a[p][c] for r > p, c >= p and
 *                        b[r] -= mult[r][p] * b[p]; threadIdx.x runs along a row
 *                        (2-D, BLOCK_SIZE_XY x BLOCK_SIZE_XY threads per block)
 *
 * With -DUSE_FAST_KERNEL the file also provides gauss_update_tiled, which reads
 * the pivot row segment and the multipliers of its tile once, into shared memory.
 */
#ifndef _GAUSS_ELIM_KERNEL_CU_
#define _GAUSS_ELIM_KERNEL_CU_

#define MAXBLOCKSIZE 512   // threads per block of the 1-D kernel
#define BLOCK_SIZE_XY 16   /* the 2-D kernels run on 16 x 16 blocks */

__global__ void gauss_pivot_column(float *mult, const float *a, int n, int p)
{
	const int r = p + 1 + blockIdx.x * blockDim.x + threadIdx.x;
	if (r >= n)
		return;
	mult[(size_t)r * n + p] = a[(size_t)r * n + p] / a[(size_t)p * n + p];
}

__global__ void gauss_update(const float *mult, float *a, float *b, int n, int p)
{
	const int c = p + blockIdx.x * blockDim.x + threadIdx.x;
	const int r = p + 1 + blockIdx.y * blockDim.y + threadIdx.y;
	if (r >= n || c >= n)
		return;

	const float f = mult[(size_t)r * n + p];
	a[(size_t)r * n + c] -= f * a[(size_t)p * n + c];
	if (c == p)
		b[r] -= f * b[p];
}

#ifdef USE_FAST_KERNEL
__global__ void gauss_update_tiled(const float *__restrict__ mult, float *__restrict__ a, float *__restrict__ b,
                                   int n, int p)
{
	__shared__ float pivotRow[BLOCK_SIZE_XY];
	__shared__ float factor[BLOCK_SIZE_XY];

	const int c = p + blockIdx.x * BLOCK_SIZE_XY + threadIdx.x;
	const int r = p + 1 + blockIdx.y * BLOCK_SIZE_XY + threadIdx.y;

	if (threadIdx.y == 0)
		pivotRow[threadIdx.x] = (c < n) ? a[(size_t)p * n + c] : 0.0f;
	if (threadIdx.x == 0)
		factor[threadIdx.y] = (r < n) ? __ldg(&mult[(size_t)r * n + p]) : 0.0f;
	__syncthreads();

	if (r >= n || c >= n)
		return;
	a[(size_t)r * n + c] -= factor[threadIdx.y] * pivotRow[threadIdx.x];
	if (c == p)
		b[r] -= factor[threadIdx.y] * b[p];
}
#endif /* USE_FAST_KERNEL */

#endif /* _GAUSS_ELIM_KERNEL_CU_ */
