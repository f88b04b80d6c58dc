// A second file with a macro of the same name and another value: each kernel is named
// with its own file's SCALE_SHIFT.
#define SCALE_SHIFT 3
#define ROWS_PER_BLOCK(n) ((n) / 32)

template <int shift, int rows>
__global__ void shift_rows(const int* __restrict__ x, int* __restrict__ y, int n) {
    int i = blockIdx.x * blockDim.x * rows + threadIdx.x;
    for (int r = 0; r < rows; ++r, i += blockDim.x) {
        if (i < n) y[i] = x[i] << shift;
    }
}
