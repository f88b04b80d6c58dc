// Kernels that call a kept library's functions that hand generic lambdas on
// (sysinclude/fakelib/lambdas.h, given with -isystem).
#include <fakelib/lambdas.h>

__global__ void lambda_reads_thread(int* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = fakelib::plus_thread<int>(i);
}

__global__ void lambda_doubles(int* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = fakelib::doubled<int>(i);
}

__global__ void lambda_through_parameter(int* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = fakelib::scaled<fakelib::Twice>(i);
}
