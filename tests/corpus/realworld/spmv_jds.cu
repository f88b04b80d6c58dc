/*
 * spmv_jds.cu -- y = A x for a sparse A in jagged-diagonal storage (JDS).
 *
 * The rows are sorted by decreasing number of non-zeros; entry d of every
 * sorted row belongs to jagged diagonal d, which is stored contiguously starting
 * at slot c_jd_offset[d], one slot per sorted row.  Threads of a warp walk as
 * many diagonals as the warp's longest row has entries (c_warp_depth).  rowOf
 * maps a sorted row back to its row in A.
 *
 * Both tables are read by all threads in lock-step, so they live in constant
 * memory (spmv_jds_upload).  The driver uses blocks of 192 threads (6 warps).
 */
#include "parboil_util.h"

#define MAX_DIAGS 4096
#define MAX_WARPS 8192

__constant__ int c_jd_offset[MAX_DIAGS];
__constant__ int c_warp_depth[MAX_WARPS];

__global__ void spmv_jds_kernel(const float *__restrict__ vals,
                                const int *__restrict__ cols,
                                const int *__restrict__ rowOf,
                                const float *__restrict__ x,
                                float *__restrict__ y,
                                int nrows)
{
	const int r = blockIdx.x * blockDim.x + threadIdx.x;   /* sorted row */
	if (r >= nrows)
		return;

	const int depth = c_warp_depth[r / 32];
	float acc = 0.0f;
	for (int d = 0; d < depth; ++d) {
		const int slot = c_jd_offset[d] + r;
		acc += vals[slot] * x[cols[slot]];
	}
	y[rowOf[r]] = acc;
}

void spmv_jds_upload(const int *h_jd_offset, int ndiags, const int *h_warp_depth, int nwarps)
{
	cudaMemcpyToSymbol(c_jd_offset, h_jd_offset, ndiags * sizeof(int));
	cudaMemcpyToSymbol(c_warp_depth, h_warp_depth, nwarps * sizeof(int));
	CHECK_ERROR("spmv_jds_upload");
}
