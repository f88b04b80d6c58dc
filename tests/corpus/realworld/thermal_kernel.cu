/*
 * thermal_kernel.cu -- transient heat on a chip floor plan, several explicit time
 * steps per launch.
 *
 * A block loads a TILE x TILE window of temperatures and power densities, then
 * advances `steps` time steps in shared memory.  Each step invalidates HALO cells
 * around the window, so a block owns only the centre (TILE - 2*steps*HALO)^2 cells
 * and neighbouring windows overlap.  Cells on the chip edge mirror themselves.
 */
#ifndef THERMAL_KERNEL_CU
#define THERMAL_KERNEL_CU

#define TILE 16 /* threads per side of the (square) thread block */
#define HALO 1  // cells lost at each window edge per time step
#define AMBIENT_TEMP 80.0f

#define CELL(a, x, y, w) (a)[(y) * (w) + (x)]
#define CLAMP(v, lo, hi) ((v) < (lo) ? (lo) : ((v) > (hi) ? (hi) : (v)))

__global__ void thermal_steps(const float *power,
                              const float *t_in,
                              float *t_out,
                              int nx, int ny,
                              int steps,
                              float dt_over_cap,  /* step / capacitance */
                              float gx, float gy, /* lateral conductances */
                              float gz)           /* vertical conductance to ambient */
{
    __shared__ float cur[TILE][TILE];
    __shared__ float nxt[TILE][TILE];
    __shared__ float pwr[TILE][TILE];

    const int tx = threadIdx.x, ty = threadIdx.y;
    const int owned = TILE - 2 * steps * HALO;
    const int x = blockIdx.x * owned - steps * HALO + tx;
    const int y = blockIdx.y * owned - steps * HALO + ty;
    const bool onChip = x >= 0 && x < nx && y >= 0 && y < ny;

    const int cx = CLAMP(x, 0, nx - 1), cy = CLAMP(y, 0, ny - 1);
    cur[ty][tx] = CELL(t_in, cx, cy, nx);
    pwr[ty][tx] = CELL(power, cx, cy, nx);
    __syncthreads();

    // neighbours inside the window; on the chip edge a cell is its own neighbour
    const int xm = (x <= 0) ? tx : tx - 1;
    const int xp = (x >= nx - 1) ? tx : tx + 1;
    const int ym = (y <= 0) ? ty : ty - 1;
    const int yp = (y >= ny - 1) ? ty : ty + 1;

    for (int s = 1; s <= steps; s++) {
        const int lo = s * HALO, hi = TILE - 1 - s * HALO;
        const bool active = tx >= lo && tx <= hi && ty >= lo && ty <= hi;
        if (active) {
            float t = cur[ty][tx];
            nxt[ty][tx] = t + dt_over_cap * (pwr[ty][tx] +
                                             (cur[ty][xm] + cur[ty][xp] - 2.0f * t) * gx +
                                             (cur[ym][tx] + cur[yp][tx] - 2.0f * t) * gy +
                                             (AMBIENT_TEMP - t) * gz);
        }
        __syncthreads();
        if (active)
            cur[ty][tx] = nxt[ty][tx];
        __syncthreads();
    }

    const int lo = steps * HALO, hi = TILE - 1 - steps * HALO;
    if (onChip && tx >= lo && tx <= hi && ty >= lo && ty <= hi)
        CELL(t_out, x, y, nx) = cur[ty][tx];
}

#endif /* THERMAL_KERNEL_CU */
