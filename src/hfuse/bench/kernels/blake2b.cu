// BLAKE2b-512 nonce search (Sia-style: the nonce is a 64-bit field inside the header).
//
// Written for hfuse from the BLAKE2 specification (RFC 7693). Compute-bound.
//
// Input: header[20] = the 80 header bytes as little-endian 32-bit words (the raw byte
// buffer). For nonce n = start_nonce + i (i < num_nonces):
//   bytes 32..39 = n as a little-endian uint64 (replacing those header bytes);
//   digest = BLAKE2b-512(those 80 bytes), unkeyed;
//   value  = digest bytes 0..7 read as a big-endian uint64.
// hashes != nullptr: hashes[i] = value. value <= target: n is appended to found_nonces
// (found_count counts every hit, found_nonces keeps the first max_found).
// Grid-stride loop over the nonces: any grid works; the block size is 128 by design.
// The 80 bytes fit one 128-byte block, so each nonce costs one compression (12 rounds).

typedef unsigned int blake2b_u32;
typedef unsigned long long blake2b_u64;

__device__ __forceinline__ blake2b_u64 blake2b_rotr(blake2b_u64 x, int n) {
    return (x >> n) | (x << (64 - n));
}

__device__ __forceinline__ blake2b_u64 blake2b_bswap(blake2b_u64 x) {
    blake2b_u32 lo = (blake2b_u32)x;
    blake2b_u32 hi = (blake2b_u32)(x >> 32);
    lo = (lo >> 24) | ((lo >> 8) & 0x0000ff00u) | ((lo << 8) & 0x00ff0000u) | (lo << 24);
    hi = (hi >> 24) | ((hi >> 8) & 0x0000ff00u) | ((hi << 8) & 0x00ff0000u) | (hi << 24);
    return ((blake2b_u64)lo << 32) | hi;
}

// The mixing function G on state words (a, b, c, d) with message words m[x], m[y].
__device__ __forceinline__ void blake2b_g(blake2b_u64* v, const blake2b_u64* m, int a, int b, int c, int d,
                                          int x, int y) {
    v[a] = v[a] + v[b] + m[x];
    v[d] = blake2b_rotr(v[d] ^ v[a], 32);
    v[c] = v[c] + v[d];
    v[b] = blake2b_rotr(v[b] ^ v[c], 24);
    v[a] = v[a] + v[b] + m[y];
    v[d] = blake2b_rotr(v[d] ^ v[a], 16);
    v[c] = v[c] + v[d];
    v[b] = blake2b_rotr(v[b] ^ v[c], 63);
}

// One round with the message permutation s0..s15 (columns, then diagonals).
__device__ __forceinline__ void blake2b_round(blake2b_u64* v, const blake2b_u64* m, int s0, int s1, int s2,
                                              int s3, int s4, int s5, int s6, int s7, int s8, int s9,
                                              int s10, int s11, int s12, int s13, int s14, int s15) {
    blake2b_g(v, m, 0, 4, 8, 12, s0, s1);
    blake2b_g(v, m, 1, 5, 9, 13, s2, s3);
    blake2b_g(v, m, 2, 6, 10, 14, s4, s5);
    blake2b_g(v, m, 3, 7, 11, 15, s6, s7);
    blake2b_g(v, m, 0, 5, 10, 15, s8, s9);
    blake2b_g(v, m, 1, 6, 11, 12, s10, s11);
    blake2b_g(v, m, 2, 7, 8, 13, s12, s13);
    blake2b_g(v, m, 3, 4, 9, 14, s14, s15);
}

__global__ void blake2b_search(const unsigned int* header, unsigned long long start_nonce,
                               unsigned long long num_nonces, unsigned long long target,
                               unsigned long long* hashes, unsigned int* found_count,
                               unsigned long long* found_nonces, unsigned int max_found) {
    // Message: 10 little-endian 64-bit words of header, zero padding to 16 words.
    blake2b_u64 m[16];
#pragma unroll
    for (int k = 0; k < 10; ++k) m[k] = (blake2b_u64)header[2 * k] | ((blake2b_u64)header[2 * k + 1] << 32);
#pragma unroll
    for (int k = 10; k < 16; ++k) m[k] = 0ull;

    const blake2b_u64 stride = (blake2b_u64)blockDim.x * gridDim.x;
    for (blake2b_u64 i = (blake2b_u64)blockIdx.x * blockDim.x + threadIdx.x; i < num_nonces; i += stride) {
        const blake2b_u64 nonce = start_nonce + i;
        m[4] = nonce;

        blake2b_u64 v[16];
        // h = IV with the parameter block (digest 64 bytes, no key, fanout 1, depth 1).
        v[0] = 0x6a09e667f3bcc908ull ^ 0x01010040ull;
        v[1] = 0xbb67ae8584caa73bull;
        v[2] = 0x3c6ef372fe94f82bull;
        v[3] = 0xa54ff53a5f1d36f1ull;
        v[4] = 0x510e527fade682d1ull;
        v[5] = 0x9b05688c2b3e6c1full;
        v[6] = 0x1f83d9abfb41bd6bull;
        v[7] = 0x5be0cd19137e2179ull;
        v[8] = 0x6a09e667f3bcc908ull;
        v[9] = 0xbb67ae8584caa73bull;
        v[10] = 0x3c6ef372fe94f82bull;
        v[11] = 0xa54ff53a5f1d36f1ull;
        v[12] = 0x510e527fade682d1ull ^ 80ull;  // byte counter t0 = 80, t1 = 0
        v[13] = 0x9b05688c2b3e6c1full;
        v[14] = ~0x1f83d9abfb41bd6bull;         // final block flag f0 = all ones
        v[15] = 0x5be0cd19137e2179ull;

        blake2b_round(v, m, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        blake2b_round(v, m, 14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3);
        blake2b_round(v, m, 11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4);
        blake2b_round(v, m, 7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8);
        blake2b_round(v, m, 9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13);
        blake2b_round(v, m, 2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9);
        blake2b_round(v, m, 12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11);
        blake2b_round(v, m, 13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10);
        blake2b_round(v, m, 6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5);
        blake2b_round(v, m, 10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0);
        blake2b_round(v, m, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        blake2b_round(v, m, 14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3);

        // Only h'[0] = h[0] ^ v[0] ^ v[8] is needed for the first 8 digest bytes.
        const blake2b_u64 h0 = (0x6a09e667f3bcc908ull ^ 0x01010040ull) ^ v[0] ^ v[8];
        const blake2b_u64 value = blake2b_bswap(h0);
        if (hashes) hashes[i] = value;
        if (value <= target) {
            unsigned int slot = atomicAdd(found_count, 1u);
            if (slot < max_found) found_nonces[slot] = nonce;
        }
    }
}
