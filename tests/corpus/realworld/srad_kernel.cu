// srad_kernel.cu
//
// Speckle-reducing anisotropic diffusion, one time step in two launches:
//   srad_coeff   gradients towards the 4 neighbours and the diffusion coefficient
//   srad_update  divergence of the coefficient-weighted gradients, image update
//
// The tile edge comes from the Makefile (-DBLOCK_SIZE=16); blocks are
// BLOCK_SIZE x BLOCK_SIZE and the image must be a whole number of tiles.

#ifndef _SRAD_KERNEL_CU_
#define _SRAD_KERNEL_CU_

#define IDX(row, col, ncols) ((row) * (ncols) + (col))

__global__ void
srad_coeff(const float *img,
           float *dN, float *dS, float *dW, float *dE,
           float *coef,
           int rows, int cols,
           float q0sq)   /* speckle scale, squared */
{
	__shared__ float win[BLOCK_SIZE + 2][BLOCK_SIZE + 2];

	int r = blockIdx.y * BLOCK_SIZE + threadIdx.y;
	int c = blockIdx.x * BLOCK_SIZE + threadIdx.x;
	int ty = threadIdx.y + 1, tx = threadIdx.x + 1;

	win[ty][tx] = img[IDX(r, c, cols)];
	/* one ring of neighbours; the image edge repeats itself */
	if (threadIdx.y == 0)              win[0][tx] = img[IDX(r > 0 ? r - 1 : r, c, cols)];
	if (threadIdx.y == BLOCK_SIZE - 1) win[BLOCK_SIZE + 1][tx] = img[IDX(r < rows - 1 ? r + 1 : r, c, cols)];
	if (threadIdx.x == 0)              win[ty][0] = img[IDX(r, c > 0 ? c - 1 : c, cols)];
	if (threadIdx.x == BLOCK_SIZE - 1) win[ty][BLOCK_SIZE + 1] = img[IDX(r, c < cols - 1 ? c + 1 : c, cols)];
	__syncthreads();

	float centre = win[ty][tx];
	float gn = win[ty - 1][tx] - centre;
	float gs = win[ty + 1][tx] - centre;
	float gw = win[ty][tx - 1] - centre;
	float ge = win[ty][tx + 1] - centre;

	float grad2 = (gn * gn + gs * gs + gw * gw + ge * ge) / (centre * centre);
	float lap = (gn + gs + gw + ge) / centre;
	float denom = 1.0f + 0.25f * lap;
	float q2 = (0.5f * grad2 - 0.0625f * (lap * lap)) / (denom * denom);
	float k = 1.0f / (1.0f + (q2 - q0sq) / (q0sq * (1.0f + q0sq)));

	/* keep the coefficient in [0, 1] */
	if (k < 0.0f) k = 0.0f;
	else if (k > 1.0f) k = 1.0f;

	int i = IDX(r, c, cols);
	coef[i] = k;
	dN[i] = gn;
	dS[i] = gs;
	dW[i] = gw;
	dE[i] = ge;
}

__global__ void
srad_update(float *img,
            const float *dN, const float *dS, const float *dW, const float *dE,
            const float *coef,
            int rows, int cols,
            float lambda)
{
	int r = blockIdx.y * BLOCK_SIZE + threadIdx.y;
	int c = blockIdx.x * BLOCK_SIZE + threadIdx.x;
	int i = IDX(r, c, cols);

	/* north and west use this cell's coefficient, south and east the neighbour's */
	float kc = coef[i];
	float ks = coef[IDX(r < rows - 1 ? r + 1 : r, c, cols)];
	float ke = coef[IDX(r, c < cols - 1 ? c + 1 : c, cols)];

	float div = kc * dN[i] + ks * dS[i] + kc * dW[i] + ke * dE[i];
	img[i] = img[i] + 0.25f * lambda * div;
}

#endif /* _SRAD_KERNEL_CU_ */
