// layer_forward_kernel.cu -- one fully connected layer of a small MLP trainer.
//
//   layer_partial_sums: each 16x16 block multiplies HEIGHT inputs by their weights
//                       to WIDTH hidden units and sums over the inputs, leaving one
//                       partial sum per (input group, hidden unit); the host adds
//                       the groups and applies the squashing function.
//   layer_adjust_weights: gradient step with momentum on the same weight matrix.
//
// Grid: (n_hidden / WIDTH, n_in / HEIGHT); both sizes are multiples of 16.

#ifndef _LAYER_FORWARD_KERNEL_CU_
#define _LAYER_FORWARD_KERNEL_CU_

#define WIDTH 16       // hidden units per block (threadIdx.x)
#define HEIGHT 16      // inputs per block (threadIdx.y)

#define ETA 0.3f       // learning rate
#define MOMENTUM 0.3f  // momentum

__global__ void
layer_partial_sums(const float *input,     // n_in
                   const float *weights,   // n_in x n_hidden, row-major
                   float *partial,         // (n_in / HEIGHT) x n_hidden
                   int n_in,
                   int n_hidden)
{
   int tx = threadIdx.x;
   int ty = threadIdx.y;
   int h = blockIdx.x * WIDTH + tx;
   int i = blockIdx.y * HEIGHT + ty;

   __shared__ float x_s[HEIGHT];
   __shared__ float prod[HEIGHT][WIDTH];

   if (tx == 0)
      x_s[ty] = input[i];
   __syncthreads();

   prod[ty][tx] = weights[i * n_hidden + h] * x_s[ty];
   __syncthreads();

   // sum the HEIGHT products of every column
   for (int stride = HEIGHT / 2; stride > 0; stride /= 2) {
      if (ty < stride)
         prod[ty][tx] += prod[ty + stride][tx];
      __syncthreads();
   }

   if (ty == 0)
      partial[blockIdx.y * n_hidden + h] = prod[0][tx];
}

__global__ void
layer_adjust_weights(const float *delta,   // n_hidden
                     const float *layer,   // n_in
                     float *w,             // n_in x n_hidden
                     float *oldw,          // previous step, same shape
                     int n_in,
                     int n_hidden)
{
   int h = blockIdx.x * WIDTH + threadIdx.x;
   int i = blockIdx.y * HEIGHT + threadIdx.y;
   int k = i * n_hidden + h;

   float step = ETA * delta[h] * layer[i] + MOMENTUM * oldw[k];
   w[k] += step;
   oldw[k] = step;
}

#endif
