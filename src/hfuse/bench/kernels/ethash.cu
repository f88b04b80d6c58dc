// Ethash-style nonce search: the hashimoto loop over a random DAG.
//
// Written for hfuse from the Ethash specification (Ethereum Yellow Paper, appendix J)
// and the Keccak reference (FIPS 202 permutation, ORIGINAL Keccak padding 0x01).
// Memory-bound: every hash reads 64 random 128-byte pages of the DAG.
//
// Input: header[8] = the 32-byte header hash as little-endian 32-bit words (raw bytes);
// dag = num_pages pages of 128 bytes (random bytes, not the real epoch DAG).
// For nonce n = start_nonce + i (i < num_nonces):
//   seed   = Keccak-512(header hash || n as 8 little-endian bytes)       (64 bytes)
//   s[16]  = seed as little-endian 32-bit words; mix[j] = s[j % 16], j < 32
//   for r in 0..63: p = fnv(r ^ s[0], mix[r % 32]) % num_pages
//                   mix[j] = fnv(mix[j], dag word 32 * p + j), j < 32
//   with fnv(a, b) = (a * 0x01000193) ^ b (32-bit)
//   cmix[k] = fnv(fnv(fnv(mix[4k], mix[4k+1]), mix[4k+2]), mix[4k+3]), k < 8
//   result = Keccak-256(seed || cmix as little-endian words)             (32 bytes)
//   value  = result bytes 0..7 read as a big-endian uint64.
// hashes != nullptr: hashes[i] = value. value <= target: n is appended to found_nonces
// (found_count counts every hit, found_nonces keeps the first max_found).
// Grid-stride loop over the nonces: any grid works; the block size is 128 by design.
// One thread per hash.

typedef unsigned int ethash_u32;
typedef unsigned long long ethash_u64;

__constant__ ethash_u64 ethash_keccak_rc[24] = {
    0x0000000000000001ull, 0x0000000000008082ull, 0x800000000000808aull, 0x8000000080008000ull,
    0x000000000000808bull, 0x0000000080000001ull, 0x8000000080008081ull, 0x8000000000008009ull,
    0x000000000000008aull, 0x0000000000000088ull, 0x0000000080008009ull, 0x000000008000000aull,
    0x000000008000808bull, 0x800000000000008bull, 0x8000000000008089ull, 0x8000000000008003ull,
    0x8000000000008002ull, 0x8000000000000080ull, 0x000000000000800aull, 0x800000008000000aull,
    0x8000000080008081ull, 0x8000000000008080ull, 0x0000000080000001ull, 0x8000000080008008ull};

__device__ __forceinline__ ethash_u64 ethash_rotl64(ethash_u64 x, int n) {
    return (x << n) | (x >> (64 - n));
}

__device__ __forceinline__ ethash_u64 ethash_bswap64(ethash_u64 x) {
    ethash_u32 lo = (ethash_u32)x;
    ethash_u32 hi = (ethash_u32)(x >> 32);
    lo = (lo >> 24) | ((lo >> 8) & 0x0000ff00u) | ((lo << 8) & 0x00ff0000u) | (lo << 24);
    hi = (hi >> 24) | ((hi >> 8) & 0x0000ff00u) | ((hi << 8) & 0x00ff0000u) | (hi << 24);
    return ((ethash_u64)lo << 32) | hi;
}

__device__ __forceinline__ ethash_u32 ethash_fnv(ethash_u32 a, ethash_u32 b) {
    return (a * 0x01000193u) ^ b;
}

// Keccak-f[1600] on the 25 lanes a[x + 5y] (24 rounds).
__device__ __forceinline__ void ethash_keccak_f1600(ethash_u64* a) {
    ethash_u64 b[25];
    ethash_u64 c[5];
    for (int round = 0; round < 24; ++round) {
        // theta
#pragma unroll
        for (int x = 0; x < 5; ++x) c[x] = a[x] ^ a[x + 5] ^ a[x + 10] ^ a[x + 15] ^ a[x + 20];
#pragma unroll
        for (int x = 0; x < 5; ++x) {
            ethash_u64 d = c[(x + 4) % 5] ^ ethash_rotl64(c[(x + 1) % 5], 1);
#pragma unroll
            for (int y = 0; y < 25; y += 5) a[x + y] ^= d;
        }
        // rho and pi: b[y + 5 * ((2x + 3y) % 5)] = rotl(a[x + 5y], r[x][y])
    b[0] = a[0];
    b[10] = ethash_rotl64(a[1], 1);
    b[20] = ethash_rotl64(a[2], 62);
    b[5] = ethash_rotl64(a[3], 28);
    b[15] = ethash_rotl64(a[4], 27);
    b[16] = ethash_rotl64(a[5], 36);
    b[1] = ethash_rotl64(a[6], 44);
    b[11] = ethash_rotl64(a[7], 6);
    b[21] = ethash_rotl64(a[8], 55);
    b[6] = ethash_rotl64(a[9], 20);
    b[7] = ethash_rotl64(a[10], 3);
    b[17] = ethash_rotl64(a[11], 10);
    b[2] = ethash_rotl64(a[12], 43);
    b[12] = ethash_rotl64(a[13], 25);
    b[22] = ethash_rotl64(a[14], 39);
    b[23] = ethash_rotl64(a[15], 41);
    b[8] = ethash_rotl64(a[16], 45);
    b[18] = ethash_rotl64(a[17], 15);
    b[3] = ethash_rotl64(a[18], 21);
    b[13] = ethash_rotl64(a[19], 8);
    b[14] = ethash_rotl64(a[20], 18);
    b[24] = ethash_rotl64(a[21], 2);
    b[9] = ethash_rotl64(a[22], 61);
    b[19] = ethash_rotl64(a[23], 56);
    b[4] = ethash_rotl64(a[24], 14);
        // chi
#pragma unroll
        for (int y = 0; y < 25; y += 5) {
#pragma unroll
            for (int x = 0; x < 5; ++x) a[x + y] = b[x + y] ^ (~b[(x + 1) % 5 + y] & b[(x + 2) % 5 + y]);
        }
        // iota
        a[0] ^= ethash_keccak_rc[round];
    }
}

__global__ void ethash_search(const unsigned int* header, unsigned long long start_nonce,
                              unsigned long long num_nonces, unsigned long long target,
                              unsigned long long* hashes, unsigned int* found_count,
                              unsigned long long* found_nonces, unsigned int max_found,
                              const uint4* dag, unsigned int num_pages) {
    ethash_u64 hh[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) hh[k] = (ethash_u64)header[2 * k] | ((ethash_u64)header[2 * k + 1] << 32);

    const ethash_u64 stride = (ethash_u64)blockDim.x * gridDim.x;
    for (ethash_u64 i = (ethash_u64)blockIdx.x * blockDim.x + threadIdx.x; i < num_nonces; i += stride) {
        const ethash_u64 nonce = start_nonce + i;

        // seed = Keccak-512(header hash || nonce): 40 bytes, rate 72 bytes (9 lanes).
        ethash_u64 st[25];
#pragma unroll
        for (int k = 0; k < 4; ++k) st[k] = hh[k];
        st[4] = nonce;
        st[5] = 0x01ull;
#pragma unroll
        for (int k = 6; k < 25; ++k) st[k] = 0ull;
        st[8] = 0x8000000000000000ull;
        ethash_keccak_f1600(st);
        ethash_u64 seed[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) seed[k] = st[k];

        ethash_u32 mix[32];
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            mix[2 * k] = (ethash_u32)seed[k];
            mix[2 * k + 1] = (ethash_u32)(seed[k] >> 32);
            mix[2 * k + 16] = (ethash_u32)seed[k];
            mix[2 * k + 17] = (ethash_u32)(seed[k] >> 32);
        }
        const ethash_u32 s0 = (ethash_u32)seed[0];

        // 64 dependent random page reads, 8 x 16 bytes each.
#pragma unroll 1
        for (int r0 = 0; r0 < 64; r0 += 32) {
#pragma unroll
            for (int k = 0; k < 32; ++k) {
                const ethash_u32 p = ethash_fnv((ethash_u32)(r0 + k) ^ s0, mix[k]) % num_pages;
                const uint4* page = dag + (ethash_u64)p * 8u;
                uint4 d[8];
#pragma unroll
                for (int q = 0; q < 8; ++q) d[q] = __ldg(page + q);
#pragma unroll
                for (int q = 0; q < 8; ++q) {
                    mix[4 * q] = ethash_fnv(mix[4 * q], d[q].x);
                    mix[4 * q + 1] = ethash_fnv(mix[4 * q + 1], d[q].y);
                    mix[4 * q + 2] = ethash_fnv(mix[4 * q + 2], d[q].z);
                    mix[4 * q + 3] = ethash_fnv(mix[4 * q + 3], d[q].w);
                }
            }
        }

        ethash_u32 cmix[8];
#pragma unroll
        for (int k = 0; k < 8; ++k)
            cmix[k] = ethash_fnv(ethash_fnv(ethash_fnv(mix[4 * k], mix[4 * k + 1]), mix[4 * k + 2]), mix[4 * k + 3]);

        // result = Keccak-256(seed || cmix): 96 bytes, rate 136 bytes (17 lanes).
#pragma unroll
        for (int k = 0; k < 8; ++k) st[k] = seed[k];
#pragma unroll
        for (int k = 0; k < 4; ++k) st[8 + k] = (ethash_u64)cmix[2 * k] | ((ethash_u64)cmix[2 * k + 1] << 32);
        st[12] = 0x01ull;
#pragma unroll
        for (int k = 13; k < 25; ++k) st[k] = 0ull;
        st[16] = 0x8000000000000000ull;
        ethash_keccak_f1600(st);

        const ethash_u64 value = ethash_bswap64(st[0]);
        if (hashes) hashes[i] = value;
        if (value <= target) {
            unsigned int slot = atomicAdd(found_count, 1u);
            if (slot < max_found) found_nonces[slot] = nonce;
        }
    }
}
