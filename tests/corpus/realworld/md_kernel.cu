// md_kernel.cu -- Lennard-Jones forces of every atom from a fixed neighbour list
// (the inner kernel of a molecular-dynamics step).
//
// One thread per atom.  The neighbour list is stored slot-major: neighbour s of
// atom a is neighbors[s * nAtoms + a], so the loads of one slot are coalesced
// across a warp.  Positions go through the read-only data cache (__ldg); their
// w component is padding.  Launched with MD_THREADS threads per block.

#include <cuda_runtime.h>

#define MD_THREADS 128

template <typename Real, typename Real4>
__global__ void lj_forces(Real4 *__restrict__ forces,
                          const Real4 *__restrict__ pos,
                          const int maxNeighbors,
                          const int *__restrict__ neighbors,
                          const Real cutoff2,
                          const Real c12,
                          const Real c6,
                          const int nAtoms)
{
    const int atom = blockIdx.x * blockDim.x + threadIdx.x;
    if (atom >= nAtoms)
        return;

    const Real4 me = __ldg(pos + atom);
    Real fx = 0, fy = 0, fz = 0;

#pragma unroll 4
    for (int s = 0; s < maxNeighbors; ++s) {
        const Real4 other = __ldg(pos + __ldg(neighbors + s * nAtoms + atom));
        const Real dx = me.x - other.x;
        const Real dy = me.y - other.y;
        const Real dz = me.z - other.z;
        const Real d2 = dx * dx + dy * dy + dz * dz;
        if (d2 >= cutoff2)
            continue;
        const Real inv2 = Real(1) / d2;
        const Real inv6 = inv2 * inv2 * inv2;
        const Real mag = inv2 * inv6 * (c12 * inv6 - c6);
        fx += dx * mag;
        fy += dy * mag;
        fz += dz * mag;
    }

    Real4 f;
    f.x = fx;
    f.y = fy;
    f.z = fz;
    f.w = Real(0);
    forces[atom] = f;
}

// single precision is all the benchmark runs (no __ldg for double4)
template __global__ void lj_forces<float, float4>(float4 *__restrict__, const float4 *__restrict__, const int,
                                                  const int *__restrict__, const float, const float, const float,
                                                  const int);

void md_forces(float4 *d_forces, const float4 *d_pos, int maxNeighbors, const int *d_neighbors, float cutoff,
               float epsilon, float sigma, int nAtoms, cudaStream_t stream)
{
    // LJ: F = 24 eps (2 (sigma/r)^12 - (sigma/r)^6) / r^2 * d
    const float s6 = sigma * sigma * sigma * sigma * sigma * sigma;
    const float c12 = 48.0f * epsilon * s6 * s6;
    const float c6 = 24.0f * epsilon * s6;
    const int blocks = (nAtoms + MD_THREADS - 1) / MD_THREADS;
    lj_forces<float, float4><<<blocks, MD_THREADS, 0, stream>>>(d_forces, d_pos, maxNeighbors, d_neighbors,
                                                                cutoff * cutoff, c12, c6, nAtoms);
}
