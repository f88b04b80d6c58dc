/*
 * sha256_kernel.cu -- SHA-256 of many 32-byte messages (e.g. hashes of hashes),
 * one message per thread, and a difficulty check on the digests.
 *
 * The round constants and the initial hash value are uploaded to constant memory
 * once by sha256_init_constants().  Messages and digests are arrays of
 * big-endian 32-bit words, 8 per message.
 * Launch: SHA_THREADS threads per block.
 */
#include <stdint.h>
#include <stdio.h>
#include <cuda_runtime.h>

#define SHA_THREADS 128

__constant__ uint32_t dev_k[64];
__constant__ uint32_t dev_h0[8];

#define ROTR32(x, n) (((x) >> (n)) | ((x) << (32 - (n))))
#define CH(x, y, z) (((x) & (y)) ^ (~(x) & (z)))
#define MAJ(x, y, z) (((x) & (y)) ^ ((x) & (z)) ^ ((y) & (z)))
#define BSIG0(x) (ROTR32(x, 2) ^ ROTR32(x, 13) ^ ROTR32(x, 22))
#define BSIG1(x) (ROTR32(x, 6) ^ ROTR32(x, 11) ^ ROTR32(x, 25))
#define SSIG0(x) (ROTR32(x, 7) ^ ROTR32(x, 18) ^ ((x) >> 3))
#define SSIG1(x) (ROTR32(x, 17) ^ ROTR32(x, 19) ^ ((x) >> 10))

__global__ void sha256_32byte(const uint32_t *__restrict__ msgs, uint32_t *__restrict__ digests, int count)
{
	int idx = blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= count) return;

	uint32_t w[64];
#pragma unroll
	for (int i = 0; i < 8; i++)
		w[i] = msgs[idx * 8 + i];
	// padding of a 256-bit message: one 1 bit, zeros, the bit length
	w[8] = 0x80000000u;
#pragma unroll
	for (int i = 9; i < 15; i++)
		w[i] = 0;
	w[15] = 256;
#pragma unroll
	for (int i = 16; i < 64; i++)
		w[i] = SSIG1(w[i - 2]) + w[i - 7] + SSIG0(w[i - 15]) + w[i - 16];

	uint32_t a = dev_h0[0], b = dev_h0[1], c = dev_h0[2], d = dev_h0[3];
	uint32_t e = dev_h0[4], f = dev_h0[5], g = dev_h0[6], h = dev_h0[7];

#pragma unroll 8
	for (int i = 0; i < 64; i++) {
		uint32_t t1 = h + BSIG1(e) + CH(e, f, g) + dev_k[i] + w[i];
		uint32_t t2 = BSIG0(a) + MAJ(a, b, c);
		h = g;
		g = f;
		f = e;
		e = d + t1;
		d = c;
		c = b;
		b = a;
		a = t1 + t2;
	}

	uint32_t *out = digests + idx * 8;
	out[0] = dev_h0[0] + a;
	out[1] = dev_h0[1] + b;
	out[2] = dev_h0[2] + c;
	out[3] = dev_h0[3] + d;
	out[4] = dev_h0[4] + e;
	out[5] = dev_h0[5] + f;
	out[6] = dev_h0[6] + g;
	out[7] = dev_h0[7] + h;
}

// counts the digests that start with at least zeroBits zero bits
__global__ void count_below_target(const uint32_t *digests, int count, int zeroBits, int *hits)
{
	int idx = blockIdx.x * blockDim.x + threadIdx.x;
	if (idx < count) {
		uint32_t first = digests[idx * 8];
		int lz = first ? __clz(first) : 32 + __clz(digests[idx * 8 + 1]);
		if (lz >= zeroBits)
			atomicAdd(hits, 1);
	}
}

static const uint32_t host_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static const uint32_t host_h0[8] = {
	0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
};

int sha256_init_constants(void)
{
	if (cudaMemcpyToSymbol(dev_k, host_k, sizeof(host_k)) != cudaSuccess) return -1;
	if (cudaMemcpyToSymbol(dev_h0, host_h0, sizeof(host_h0)) != cudaSuccess) return -1;
	return 0;
}

int sha256_batch(const uint32_t *d_msgs, uint32_t *d_digests, int count, int zeroBits, int *d_hits)
{
	int blocks = (count + SHA_THREADS - 1) / SHA_THREADS;
	sha256_32byte<<<blocks, SHA_THREADS>>>(d_msgs, d_digests, count);
	count_below_target<<<blocks, SHA_THREADS>>>(d_digests, count, zeroBits, d_hits);
	cudaError_t err = cudaGetLastError();
	if (err != cudaSuccess) {
		fprintf(stderr, "sha256_batch: %s\n", cudaGetErrorString(err));
		return -1;
	}
	return 0;
}
