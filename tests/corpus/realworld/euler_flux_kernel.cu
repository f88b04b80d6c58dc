// euler_flux_kernel.cu -- element-wise kernels of an explicit compressible-flow
// solver (3-D Euler equations, unstructured grid, Runge-Kutta time stepping).
//
// Conserved state, variable-major: state[v * ncells + i] for
// v = density, x/y/z momentum, total energy.  ncells is padded to a multiple of
// the block size, so the kernels carry no bounds check.

#ifndef EULER_FLUX_KERNEL_CU
#define EULER_FLUX_KERNEL_CU

#include <cuda_runtime.h>

#define GAMMA_AIR 1.4f
#define RK_STAGES 3 // third-order scheme

#define IDX_RHO 0
#define IDX_MX 1    // momentum x; y and z follow
#define IDX_E 4
#define N_CONSERVED 5

// threads per block of every kernel in this file
#define EULER_BLOCK 192

__constant__ float c_freestream[N_CONSERVED];   // far-field state, set by the host

__device__ inline float3 velocity_of(float rho, float3 mom)
{
	return make_float3(mom.x / rho, mom.y / rho, mom.z / rho);
}

__device__ inline float kinetic2(float3 u) { return u.x * u.x + u.y * u.y + u.z * u.z; }

__device__ inline float pressure_of(float rho, float energy, float u2)
{
	return (GAMMA_AIR - 1.0f) * (energy - 0.5f * rho * u2);
}

__device__ inline float sound_speed(float rho, float p) { return sqrtf(GAMMA_AIR * p / rho); }

// every cell starts at the free-stream state
__global__ void init_state(int ncells, float *state)
{
	const int i = blockIdx.x * EULER_BLOCK + threadIdx.x;
	for (register int v = 0; v < N_CONSERVED; v++)
		state[v * ncells + i] = c_freestream[v];
}

// local time step of every cell from its size and fastest wave speed
__global__ void local_time_step(int ncells, const float *state, const float *areas, float *dt)
{
	const int i = blockIdx.x * EULER_BLOCK + threadIdx.x;

	register float rho = state[IDX_RHO * ncells + i];
	float3 mom = make_float3(state[(IDX_MX + 0) * ncells + i],
	                         state[(IDX_MX + 1) * ncells + i],
	                         state[(IDX_MX + 2) * ncells + i]);
	register float energy = state[IDX_E * ncells + i];

	float3 u = velocity_of(rho, mom);
	register float u2 = kinetic2(u);
	register float c = sound_speed(rho, pressure_of(rho, energy, u2));

	dt[i] = 0.5f / (sqrtf(areas[i]) * (sqrtf(u2) + c));
}

// stage `stage` (0-based) of the Runge-Kutta update
__global__ void rk_stage(int stage, int ncells, const float *old_state, float *state,
                         const float *dt, const float *residual)
{
	const int i = blockIdx.x * EULER_BLOCK + threadIdx.x;
	register float f = dt[i] / float(RK_STAGES + 1 - stage);

#pragma unroll
	for (int v = 0; v < N_CONSERVED; v++)
		state[v * ncells + i] = old_state[v * ncells + i] + f * residual[v * ncells + i];
}

void upload_freestream(const float h_state[N_CONSERVED])
{
	cudaMemcpyToSymbol(c_freestream, h_state, N_CONSERVED * sizeof(float));
}

#endif
