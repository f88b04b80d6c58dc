"""Where hfuse finds the CUDA toolkit's headers."""
import subprocess
import sys


def test_the_front_end_finds_the_toolkit_without_importing_cupy():
    # importing CuPy costs a CPU-only 'hfuse fuse' 0.1-1 s, and preprocessing needs none of it
    code = ("import sys; from hfuse.frontend.preprocess import preprocess; "
            "preprocess('__global__ void k() {}\\n', 'k.cu'); print('cupy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"

