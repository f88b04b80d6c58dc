// BLAKE-256 nonce search (the 14-round BLAKE of the SHA-3 competition, final version).
//
// Written for hfuse from the BLAKE specification (Aumasson et al., 2010). Compute-bound.
//
// Input: header[20] = the 80 header bytes as little-endian 32-bit words (the raw byte
// buffer). For nonce n = start_nonce + i (i < num_nonces):
//   bytes 76..79 = low 32 bits of n (little-endian);
//   bytes 72..75 = header bytes 72..75 XOR the high 32 bits of n (little-endian);
//   digest = BLAKE-256(those 80 bytes), unsalted;
//   value  = digest bytes 0..7 read as a big-endian uint64.
// hashes != nullptr: hashes[i] = value. value <= target: n is appended to found_nonces
// (found_count counts every hit, found_nonces keeps the first max_found).
// Grid-stride loop over the nonces: any grid works; the block size is 128 by design.
// The chain value after the first 64-byte block is computed once per thread.

typedef unsigned int blake256_u32;
typedef unsigned long long blake256_u64;

// The constants c0..c15 (leading fraction digits of pi).
__constant__ blake256_u32 blake256_c[16] = {
    0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u, 0xa4093822u, 0x299f31d0u, 0x082efa98u, 0xec4e6c89u,
    0x452821e6u, 0x38d01377u, 0xbe5466cfu, 0x34e90c6cu, 0xc0ac29b7u, 0xc97c50ddu, 0x3f84d5b5u, 0xb5470917u};

__device__ __forceinline__ blake256_u32 blake256_rotr(blake256_u32 x, int n) {
    return (x >> n) | (x << (32 - n));
}

__device__ __forceinline__ blake256_u32 blake256_bswap(blake256_u32 x) {
    return (x >> 24) | ((x >> 8) & 0x0000ff00u) | ((x << 8) & 0x00ff0000u) | (x << 24);
}

// G_i on state words (a, b, c, d) with message words x = sigma(2i), y = sigma(2i+1).
__device__ __forceinline__ void blake256_g(blake256_u32* v, const blake256_u32* m, int a, int b, int c,
                                           int d, int x, int y) {
    v[a] = v[a] + v[b] + (m[x] ^ blake256_c[y]);
    v[d] = blake256_rotr(v[d] ^ v[a], 16);
    v[c] = v[c] + v[d];
    v[b] = blake256_rotr(v[b] ^ v[c], 12);
    v[a] = v[a] + v[b] + (m[y] ^ blake256_c[x]);
    v[d] = blake256_rotr(v[d] ^ v[a], 8);
    v[c] = v[c] + v[d];
    v[b] = blake256_rotr(v[b] ^ v[c], 7);
}

// One round with the permutation s0..s15 (columns, then diagonals).
__device__ __forceinline__ void blake256_round(blake256_u32* v, const blake256_u32* m, int s0, int s1,
                                               int s2, int s3, int s4, int s5, int s6, int s7, int s8,
                                               int s9, int s10, int s11, int s12, int s13, int s14,
                                               int s15) {
    blake256_g(v, m, 0, 4, 8, 12, s0, s1);
    blake256_g(v, m, 1, 5, 9, 13, s2, s3);
    blake256_g(v, m, 2, 6, 10, 14, s4, s5);
    blake256_g(v, m, 3, 7, 11, 15, s6, s7);
    blake256_g(v, m, 0, 5, 10, 15, s8, s9);
    blake256_g(v, m, 1, 6, 11, 12, s10, s11);
    blake256_g(v, m, 2, 7, 8, 13, s12, s13);
    blake256_g(v, m, 3, 4, 9, 14, s14, s15);
}

// Compression of one 16-word (big-endian) block m into the chain value h; t = bit counter.
__device__ __forceinline__ void blake256_compress(blake256_u32* h, const blake256_u32* m, blake256_u32 t0,
                                                  blake256_u32 t1) {
    blake256_u32 v[16];
#pragma unroll
    for (int k = 0; k < 8; ++k) v[k] = h[k];
    v[8] = blake256_c[0];
    v[9] = blake256_c[1];
    v[10] = blake256_c[2];
    v[11] = blake256_c[3];
    v[12] = t0 ^ blake256_c[4];
    v[13] = t0 ^ blake256_c[5];
    v[14] = t1 ^ blake256_c[6];
    v[15] = t1 ^ blake256_c[7];
    blake256_round(v, m, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    blake256_round(v, m, 14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3);
    blake256_round(v, m, 11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4);
    blake256_round(v, m, 7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8);
    blake256_round(v, m, 9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13);
    blake256_round(v, m, 2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9);
    blake256_round(v, m, 12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11);
    blake256_round(v, m, 13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10);
    blake256_round(v, m, 6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5);
    blake256_round(v, m, 10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0);
    blake256_round(v, m, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    blake256_round(v, m, 14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3);
    blake256_round(v, m, 11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4);
    blake256_round(v, m, 7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8);
#pragma unroll
    for (int k = 0; k < 8; ++k) h[k] ^= v[k] ^ v[k + 8];
}

__global__ void blake256_search(const unsigned int* header, unsigned long long start_nonce,
                                unsigned long long num_nonces, unsigned long long target,
                                unsigned long long* hashes, unsigned int* found_count,
                                unsigned long long* found_nonces, unsigned int max_found) {
    // Chain value after the first block (header bytes 0..63, counter 512 bits).
    blake256_u32 mid[8];
    blake256_u32 m[16];
    mid[0] = 0x6a09e667u; mid[1] = 0xbb67ae85u; mid[2] = 0x3c6ef372u; mid[3] = 0xa54ff53au;
    mid[4] = 0x510e527fu; mid[5] = 0x9b05688cu; mid[6] = 0x1f83d9abu; mid[7] = 0x5be0cd19u;
#pragma unroll
    for (int k = 0; k < 16; ++k) m[k] = blake256_bswap(header[k]);
    blake256_compress(mid, m, 512u, 0u);

    const blake256_u64 stride = (blake256_u64)blockDim.x * gridDim.x;
    for (blake256_u64 i = (blake256_u64)blockIdx.x * blockDim.x + threadIdx.x; i < num_nonces; i += stride) {
        const blake256_u64 nonce = start_nonce + i;
        // Last block: header bytes 64..79, then the padding 1 0...0 1 and the 64-bit
        // length 640; counter 640 bits. (Header words re-read from the cache each time:
        // kept in registers, ptxas precomputes their XORs with the constants and needs
        // ~118 registers instead of ~72.)
        m[0] = blake256_bswap(header[16]);
        m[1] = blake256_bswap(header[17]);
        m[2] = blake256_bswap(header[18] ^ (blake256_u32)(nonce >> 32));
        m[3] = blake256_bswap((blake256_u32)nonce);
        m[4] = 0x80000000u;
#pragma unroll
        for (int k = 5; k < 13; ++k) m[k] = 0u;
        m[13] = 1u;
        m[14] = 0u;
        m[15] = 640u;
        blake256_u32 h[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) h[k] = mid[k];
        blake256_compress(h, m, 640u, 0u);

        const blake256_u64 value = ((blake256_u64)h[0] << 32) | h[1];
        if (hashes) hashes[i] = value;
        if (value <= target) {
            unsigned int slot = atomicAdd(found_count, 1u);
            if (slot < max_found) found_nonces[slot] = nonce;
        }
    }
}
