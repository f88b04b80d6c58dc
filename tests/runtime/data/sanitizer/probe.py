"""Writes the compute-sanitizer logs under this folder (run on a GPU):

    for t in racecheck memcheck initcheck; do
      compute-sanitizer --tool $t --print-limit 3 --log-file $t.log python probe.py ARG; done

with ARG none, oob and uninit respectively (racy runs every time)."""
import cupy as cp
src = r'''
extern "C" __global__ void racy(int* out) {
  __shared__ int s[64];
  s[threadIdx.x % 64] = threadIdx.x;   // race: 2 threads write the same slot
  __syncthreads();
  out[threadIdx.x] = s[(threadIdx.x + 1) % 64];
}
extern "C" __global__ void oob(int* out) { out[threadIdx.x + 128] = 1; }
extern "C" __global__ void uninit(int* out, const int* in) { out[threadIdx.x] = in[threadIdx.x]; }
'''
m = cp.RawModule(code=src)
out = cp.zeros(128, dtype=cp.int32)
m.get_function("racy")((1,), (128,), (out,)); cp.cuda.runtime.deviceSynchronize()
import sys
if sys.argv[1] == "oob":
    m.get_function("oob")((1,), (128,), (out,)); cp.cuda.runtime.deviceSynchronize()
if sys.argv[1] == "uninit":
    x = cp.empty(128, dtype=cp.int32)
    m.get_function("uninit")((1,), (128,), (out, x)); cp.cuda.runtime.deviceSynchronize()
print("done")
