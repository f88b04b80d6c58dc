// The same name as extern_smem_a.cu, four ints to an element: indexing it as floats would
// read other addresses.
extern __shared__ int4 smem[];

__global__ void rotate_quads(int4* data, int n) {
  const int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  smem[t] = i < n ? data[i] : make_int4(0, 0, 0, 0);
  __syncthreads();
  const int4 q = smem[(t + 1) % blockDim.x];
  if (i < n) data[i] = make_int4(q.y, q.z, q.w, q.x);
}
