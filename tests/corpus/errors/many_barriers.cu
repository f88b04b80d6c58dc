// Sixteen kernels that all use __syncthreads(): one more than the 15 named barriers.

extern "C" __global__ void sync_k0(int* d) {
  __shared__ int mb0[32];
  mb0[threadIdx.x] = d[threadIdx.x] + 0;
  __syncthreads();
  d[threadIdx.x] = mb0[31 - threadIdx.x];
}

extern "C" __global__ void sync_k1(int* d) {
  __shared__ int mb1[32];
  mb1[threadIdx.x] = d[threadIdx.x] + 1;
  __syncthreads();
  d[threadIdx.x] = mb1[31 - threadIdx.x];
}

extern "C" __global__ void sync_k2(int* d) {
  __shared__ int mb2[32];
  mb2[threadIdx.x] = d[threadIdx.x] + 2;
  __syncthreads();
  d[threadIdx.x] = mb2[31 - threadIdx.x];
}

extern "C" __global__ void sync_k3(int* d) {
  __shared__ int mb3[32];
  mb3[threadIdx.x] = d[threadIdx.x] + 3;
  __syncthreads();
  d[threadIdx.x] = mb3[31 - threadIdx.x];
}

extern "C" __global__ void sync_k4(int* d) {
  __shared__ int mb4[32];
  mb4[threadIdx.x] = d[threadIdx.x] + 4;
  __syncthreads();
  d[threadIdx.x] = mb4[31 - threadIdx.x];
}

extern "C" __global__ void sync_k5(int* d) {
  __shared__ int mb5[32];
  mb5[threadIdx.x] = d[threadIdx.x] + 5;
  __syncthreads();
  d[threadIdx.x] = mb5[31 - threadIdx.x];
}

extern "C" __global__ void sync_k6(int* d) {
  __shared__ int mb6[32];
  mb6[threadIdx.x] = d[threadIdx.x] + 6;
  __syncthreads();
  d[threadIdx.x] = mb6[31 - threadIdx.x];
}

extern "C" __global__ void sync_k7(int* d) {
  __shared__ int mb7[32];
  mb7[threadIdx.x] = d[threadIdx.x] + 7;
  __syncthreads();
  d[threadIdx.x] = mb7[31 - threadIdx.x];
}

extern "C" __global__ void sync_k8(int* d) {
  __shared__ int mb8[32];
  mb8[threadIdx.x] = d[threadIdx.x] + 8;
  __syncthreads();
  d[threadIdx.x] = mb8[31 - threadIdx.x];
}

extern "C" __global__ void sync_k9(int* d) {
  __shared__ int mb9[32];
  mb9[threadIdx.x] = d[threadIdx.x] + 9;
  __syncthreads();
  d[threadIdx.x] = mb9[31 - threadIdx.x];
}

extern "C" __global__ void sync_k10(int* d) {
  __shared__ int mb10[32];
  mb10[threadIdx.x] = d[threadIdx.x] + 10;
  __syncthreads();
  d[threadIdx.x] = mb10[31 - threadIdx.x];
}

extern "C" __global__ void sync_k11(int* d) {
  __shared__ int mb11[32];
  mb11[threadIdx.x] = d[threadIdx.x] + 11;
  __syncthreads();
  d[threadIdx.x] = mb11[31 - threadIdx.x];
}

extern "C" __global__ void sync_k12(int* d) {
  __shared__ int mb12[32];
  mb12[threadIdx.x] = d[threadIdx.x] + 12;
  __syncthreads();
  d[threadIdx.x] = mb12[31 - threadIdx.x];
}

extern "C" __global__ void sync_k13(int* d) {
  __shared__ int mb13[32];
  mb13[threadIdx.x] = d[threadIdx.x] + 13;
  __syncthreads();
  d[threadIdx.x] = mb13[31 - threadIdx.x];
}

extern "C" __global__ void sync_k14(int* d) {
  __shared__ int mb14[32];
  mb14[threadIdx.x] = d[threadIdx.x] + 14;
  __syncthreads();
  d[threadIdx.x] = mb14[31 - threadIdx.x];
}

extern "C" __global__ void sync_k15(int* d) {  // ERROR-LINE
  __shared__ int mb15[32];
  mb15[threadIdx.x] = d[threadIdx.x] + 15;
  __syncthreads();
  d[threadIdx.x] = mb15[31 - threadIdx.x];
}
