// SHA256d nonce search (Bitcoin-style double SHA-256 of an 80-byte block header).
//
// Written for hfuse from the SHA-256 specification (FIPS 180-4). Compute-bound.
//
// Input: header[20] = the 80 header bytes as little-endian 32-bit words (the raw byte
// buffer). For nonce n = start_nonce + i (i < num_nonces):
//   bytes 76..79 = low 32 bits of n (little-endian), as in Bitcoin;
//   bytes 72..75 = header bytes 72..75 XOR the high 32 bits of n (little-endian);
//   digest = SHA-256(SHA-256(those 80 bytes));
//   value  = digest bytes 0..7 read as a big-endian uint64.
// hashes != nullptr: hashes[i] = value. value <= target: n is appended to found_nonces
// (found_count counts every hit, found_nonces keeps the first max_found).
// Grid-stride loop over the nonces: any grid works; the block size is 128 by design.
// The midstate of the first 64 header bytes is computed once per thread.

typedef unsigned int sha256_u32;
typedef unsigned long long sha256_u64;

__constant__ sha256_u32 sha256_k[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu, 0x59f111f1u, 0x923f82a4u, 0xab1c5ed5u,
    0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u,
    0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu, 0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau,
    0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u,
    0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u,
    0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u, 0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u,
    0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u, 0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u};

__device__ __forceinline__ sha256_u32 sha256_rotr(sha256_u32 x, int n) {
    return (x >> n) | (x << (32 - n));
}

__device__ __forceinline__ sha256_u32 sha256_bswap(sha256_u32 x) {
    return (x >> 24) | ((x >> 8) & 0x0000ff00u) | ((x << 8) & 0x00ff0000u) | (x << 24);
}

__device__ __forceinline__ void sha256_init(sha256_u32* st) {
    st[0] = 0x6a09e667u; st[1] = 0xbb67ae85u; st[2] = 0x3c6ef372u; st[3] = 0xa54ff53au;
    st[4] = 0x510e527fu; st[5] = 0x9b05688cu; st[6] = 0x1f83d9abu; st[7] = 0x5be0cd19u;
}

// One compression of the 16 big-endian message words w (overwritten: message schedule).
__device__ __forceinline__ void sha256_compress(sha256_u32* st, sha256_u32* w) {
    sha256_u32 a = st[0], b = st[1], c = st[2], d = st[3];
    sha256_u32 e = st[4], f = st[5], g = st[6], h = st[7];
#pragma unroll
    for (int t = 0; t < 64; ++t) {
        if (t >= 16) {
            sha256_u32 x = w[(t - 15) & 15];
            sha256_u32 y = w[(t - 2) & 15];
            sha256_u32 s0 = sha256_rotr(x, 7) ^ sha256_rotr(x, 18) ^ (x >> 3);
            sha256_u32 s1 = sha256_rotr(y, 17) ^ sha256_rotr(y, 19) ^ (y >> 10);
            w[t & 15] += s0 + w[(t - 7) & 15] + s1;
        }
        sha256_u32 S1 = sha256_rotr(e, 6) ^ sha256_rotr(e, 11) ^ sha256_rotr(e, 25);
        sha256_u32 ch = (e & f) ^ (~e & g);
        sha256_u32 t1 = h + S1 + ch + sha256_k[t] + w[t & 15];
        sha256_u32 S0 = sha256_rotr(a, 2) ^ sha256_rotr(a, 13) ^ sha256_rotr(a, 22);
        sha256_u32 maj = (a & b) ^ (a & c) ^ (b & c);
        sha256_u32 t2 = S0 + maj;
        h = g; g = f; f = e; e = d + t1;
        d = c; c = b; b = a; a = t1 + t2;
    }
    st[0] += a; st[1] += b; st[2] += c; st[3] += d;
    st[4] += e; st[5] += f; st[6] += g; st[7] += h;
}

__global__ void sha256_search(const unsigned int* header, unsigned long long start_nonce,
                              unsigned long long num_nonces, unsigned long long target,
                              unsigned long long* hashes, unsigned int* found_count,
                              unsigned long long* found_nonces, unsigned int max_found) {
    // Midstate: the first 64 header bytes do not depend on the nonce.
    sha256_u32 mid[8];
    sha256_u32 w[16];
    sha256_init(mid);
#pragma unroll
    for (int k = 0; k < 16; ++k) w[k] = sha256_bswap(header[k]);
    sha256_compress(mid, w);
    const sha256_u32 m16 = sha256_bswap(header[16]);
    const sha256_u32 m17 = sha256_bswap(header[17]);
    const sha256_u32 h18 = header[18];

    const sha256_u64 stride = (sha256_u64)blockDim.x * gridDim.x;
    for (sha256_u64 i = (sha256_u64)blockIdx.x * blockDim.x + threadIdx.x; i < num_nonces; i += stride) {
        const sha256_u64 nonce = start_nonce + i;

        // First hash, second block: header bytes 64..79 and the padding (640 bits).
        sha256_u32 st[8];
#pragma unroll
        for (int k = 0; k < 8; ++k) st[k] = mid[k];
        w[0] = m16;
        w[1] = m17;
        w[2] = sha256_bswap(h18 ^ (sha256_u32)(nonce >> 32));
        w[3] = sha256_bswap((sha256_u32)nonce);
        w[4] = 0x80000000u;
#pragma unroll
        for (int k = 5; k < 15; ++k) w[k] = 0u;
        w[15] = 640u;
        sha256_compress(st, w);

        // Second hash of the 32-byte digest (256 bits).
#pragma unroll
        for (int k = 0; k < 8; ++k) w[k] = st[k];
        w[8] = 0x80000000u;
#pragma unroll
        for (int k = 9; k < 15; ++k) w[k] = 0u;
        w[15] = 256u;
        sha256_init(st);
        sha256_compress(st, w);

        const sha256_u64 value = ((sha256_u64)st[0] << 32) | st[1];
        if (hashes) hashes[i] = value;
        if (value <= target) {
            unsigned int slot = atomicAdd(found_count, 1u);
            if (slot < max_found) found_nonces[slot] = nonce;
        }
    }
}
