/*
 * mri_q_kernel.cu -- the Q matrix of non-Cartesian MRI reconstruction.
 *
 *   phi_magnitude   |phi(k)|^2 of every k-space sample                   512 threads/block
 *   compute_q       Q(x) += sum over the samples of |phi(k)|^2 e^{2 pi i k.x}
 *                                                                        256 threads/block
 *
 * The trajectory is streamed through constant memory K_CHUNK samples at a time
 * (upload_k_chunk); compute_q accumulates into Qr / Qi, one launch per chunk.
 * The number of voxels is padded to a multiple of Q_THREADS: no bounds check.
 */
#include <stdio.h>
#include <cuda_runtime.h>

#include "parboil_util.h"

#define TWO_PI 6.28318530717958647692f

#define PHI_THREADS 512
#define Q_THREADS 256
#define K_CHUNK 1024

struct kTraj {
  float kx, ky, kz;
  float phiMag;
};

__constant__ kTraj c_k[K_CHUNK];

__global__ void phi_magnitude(const float *phiR, const float *phiI, float *phiMag, int numK)
{
  const int s = blockIdx.x * PHI_THREADS + threadIdx.x;
  if (s < numK)
    phiMag[s] = phiR[s] * phiR[s] + phiI[s] * phiI[s];
}

__global__ void compute_q(int chunkLen, const float *x, const float *y, const float *z, float *Qr, float *Qi)
{
  const int v = blockIdx.x * Q_THREADS + threadIdx.x;
  const float px = x[v], py = y[v], pz = z[v];
  float re = Qr[v], im = Qi[v];

#pragma unroll 4
  for (int s = 0; s < chunkLen; s++) {
    const kTraj k = c_k[s];
    float sn, cs;
    sincosf(TWO_PI * (k.kx * px + k.ky * py + k.kz * pz), &sn, &cs);
    re += k.phiMag * cs;
    im += k.phiMag * sn;
  }

  Qr[v] = re;
  Qi[v] = im;
}

void upload_k_chunk(const kTraj *h_chunk, int len)
{
  cudaMemcpyToSymbol(c_k, h_chunk, len * sizeof(kTraj));
  CHECK_ERROR("upload_k_chunk");
}
