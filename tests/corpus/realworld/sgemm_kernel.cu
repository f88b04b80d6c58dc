/***************************************************************************
 * sgemm_kernel.cu
 *
 * C = alpha * A * B + beta * C, single precision, all row-major:
 *   A: M x K (leading dimension lda), B: K x N (ldb), C: M x N (ldc).
 *
 * A block of BT_X x BT_Y = 16 x 8 threads computes a TILE_M x TILE_N = 64 x 32
 * tile of C.  Each thread keeps ROWS_PER_THREAD x COLS_PER_THREAD = 8 x 2 results
 * in registers; slices of TILE_K = 8 columns of A and rows of B are staged
 * through shared memory.  M, N and K must be multiples of the tile sizes.
 ***************************************************************************/

#include "parboil_util.h"

#define BT_X 16
#define BT_Y 8
#define TILE_M 64                          /* rows of C per block    */
#define TILE_N 32                          /* columns of C per block */
#define TILE_K 8                           /* k-slice per iteration  */
#define ROWS_PER_THREAD (TILE_M / BT_Y)    /* 8 */
#define COLS_PER_THREAD (TILE_N / BT_X)    /* 2 */
#define BLOCK_THREADS (BT_X * BT_Y)

__global__ void sgemm_nn_regblock(const float *A, int lda,
                                  const float *B, int ldb,
                                  float *C, int ldc,
                                  int K, float alpha, float beta)
{
  __shared__ float As[TILE_K][TILE_M];   /* the A slice, transposed: As[k][row] */
  __shared__ float Bs[TILE_K][TILE_N];

  const int tid = threadIdx.y * BT_X + threadIdx.x;
  const int rowBase = blockIdx.y * TILE_M;
  const int colBase = blockIdx.x * TILE_N;

  float acc[ROWS_PER_THREAD][COLS_PER_THREAD];
#pragma unroll
  for (int i = 0; i < ROWS_PER_THREAD; i++)
#pragma unroll
    for (int j = 0; j < COLS_PER_THREAD; j++)
      acc[i][j] = 0.0f;

  for (int k0 = 0; k0 < K; k0 += TILE_K) {
    /* 64 x 8 values of A: 4 per thread */
#pragma unroll
    for (int l = 0; l < (TILE_M * TILE_K) / BLOCK_THREADS; l++) {
      const int e = tid + l * BLOCK_THREADS;
      const int r = e / TILE_K, kk = e % TILE_K;
      As[kk][r] = A[(rowBase + r) * lda + k0 + kk];
    }
    /* 8 x 32 values of B: 2 per thread */
#pragma unroll
    for (int l = 0; l < (TILE_K * TILE_N) / BLOCK_THREADS; l++) {
      const int e = tid + l * BLOCK_THREADS;
      const int kk = e / TILE_N, c = e % TILE_N;
      Bs[kk][c] = B[(k0 + kk) * ldb + colBase + c];
    }
    __syncthreads();

#pragma unroll
    for (int kk = 0; kk < TILE_K; kk++) {
      float b[COLS_PER_THREAD];
#pragma unroll
      for (int j = 0; j < COLS_PER_THREAD; j++)
        b[j] = Bs[kk][threadIdx.x + j * BT_X];
#pragma unroll
      for (int i = 0; i < ROWS_PER_THREAD; i++) {
        const float a = As[kk][threadIdx.y + i * BT_Y];
#pragma unroll
        for (int j = 0; j < COLS_PER_THREAD; j++)
          acc[i][j] += a * b[j];
      }
    }
    __syncthreads();
  }

#pragma unroll
  for (int i = 0; i < ROWS_PER_THREAD; i++) {
    const int r = rowBase + threadIdx.y + i * BT_Y;
#pragma unroll
    for (int j = 0; j < COLS_PER_THREAD; j++) {
      const int c = colBase + threadIdx.x + j * BT_X;
      C[r * ldc + c] = alpha * acc[i][j] + beta * C[r * ldc + c];
    }
  }
}

int sgemm_nn(int M, int N, int K, float alpha, const float *A, int lda, const float *B, int ldb, float beta,
             float *C, int ldc)
{
  if (M % TILE_M || N % TILE_N || K % TILE_K) {
    fprintf(stderr, "sgemm_nn: M, N, K = %d, %d, %d must be multiples of %d, %d, %d\n", M, N, K, TILE_M, TILE_N,
            TILE_K);
    return -1;
  }
  dim3 threads(BT_X, BT_Y);
  dim3 grid(N / TILE_N, M / TILE_M);
  sgemm_nn_regblock<<<grid, threads>>>(A, lda, B, ldb, C, ldc, K, alpha, beta);
  CHECK_ERROR("sgemm_nn_regblock");
  return 0;
}
