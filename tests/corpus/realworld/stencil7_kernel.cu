/*
 * stencil7_kernel.cu -- 7-point Jacobi stencil on an nx x ny x nz grid:
 *   Anext = c1 * (sum of the 6 neighbours) - c0 * A0
 * Boundary cells are left untouched.
 *
 * stencil_naive     2-D thread blocks (32 x 4) march along z, keeping the column
 *                   below/above the current cell in registers
 * stencil_shared    32 x 8 blocks stage the current xy-plane (with a 1-cell halo)
 *                   in shared memory before every z step
 */
#include "parboil_util.h"

#define AT3(nx, ny, x, y, z) ((x) + (nx) * ((y) + (ny) * (z)))

#define SH_TX 32
#define SH_TY 8

__global__ void stencil_naive(float c0, float c1, const float *A0, float *Anext, int nx, int ny, int nz)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	int j = blockIdx.y * blockDim.y + threadIdx.y;

	if (i > 0 && j > 0 && i < nx - 1 && j < ny - 1) {
		float below = A0[AT3(nx, ny, i, j, 0)];
		float here = A0[AT3(nx, ny, i, j, 1)];
		for (int k = 1; k < nz - 1; k++) {
			float above = A0[AT3(nx, ny, i, j, k + 1)];
			Anext[AT3(nx, ny, i, j, k)] =
			    (above + below +
			     A0[AT3(nx, ny, i, j + 1, k)] + A0[AT3(nx, ny, i, j - 1, k)] +
			     A0[AT3(nx, ny, i + 1, j, k)] + A0[AT3(nx, ny, i - 1, j, k)]) * c1 -
			    here * c0;
			below = here;
			here = above;
		}
	}
}

__global__ void stencil_shared(float c0, float c1, const float *A0, float *Anext, int nx, int ny, int nz)
{
	__shared__ float plane[SH_TY + 2][SH_TX + 2];

	const int tx = threadIdx.x, ty = threadIdx.y;
	const int i = blockIdx.x * SH_TX + tx;
	const int j = blockIdx.y * SH_TY + ty;
	const bool interior = i > 0 && j > 0 && i < nx - 1 && j < ny - 1;
	const int ic = i < nx ? i : nx - 1;
	const int jc = j < ny ? j : ny - 1;

	for (int k = 1; k < nz - 1; k++) {
		plane[ty + 1][tx + 1] = A0[AT3(nx, ny, ic, jc, k)];
		if (tx == 0)         plane[ty + 1][0] = A0[AT3(nx, ny, ic > 0 ? ic - 1 : 0, jc, k)];
		if (tx == SH_TX - 1) plane[ty + 1][SH_TX + 1] = A0[AT3(nx, ny, ic < nx - 1 ? ic + 1 : ic, jc, k)];
		if (ty == 0)         plane[0][tx + 1] = A0[AT3(nx, ny, ic, jc > 0 ? jc - 1 : 0, k)];
		if (ty == SH_TY - 1) plane[SH_TY + 1][tx + 1] = A0[AT3(nx, ny, ic, jc < ny - 1 ? jc + 1 : jc, k)];
		__syncthreads();

		if (interior) {
			Anext[AT3(nx, ny, i, j, k)] =
			    (A0[AT3(nx, ny, i, j, k + 1)] + A0[AT3(nx, ny, i, j, k - 1)] +
			     plane[ty + 2][tx + 1] + plane[ty][tx + 1] +
			     plane[ty + 1][tx + 2] + plane[ty + 1][tx]) * c1 -
			    plane[ty + 1][tx + 1] * c0;
		}
		__syncthreads();   /* the plane is overwritten in the next step */
	}
}
