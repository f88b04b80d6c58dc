"""Where an isolated tune spends its time: one benchmark pair tuned with and without the
worker process, each step timed by wrapping the tuner's internals (a measuring script,
not an API). Output: bench/results/h100/isolation/profile.txt.

    python bench/scripts/profile_isolation.py
"""
import functools
import sys
import time

from hfuse.tuning import isolation as I
from hfuse.tuning import tuner as T
from hfuse.bench.workloads import registry
from hfuse.tuning.tuner import TuneSettings, tune
acc = {}
def timed(obj, name, key):
    real = getattr(obj, name)
    @functools.wraps(real)
    def wrap(*a, **k):
        t = time.perf_counter()
        try: return real(*a, **k)
        finally: acc[key] = acc.get(key, 0) + time.perf_counter() - t
    setattr(obj, name, wrap)
timed(T, "save_image", "save_image")
timed(I.WorkerMeasurer, "_start", "worker_start")
timed(I.WorkerMeasurer, "unfused", "unfused")
timed(I.WorkerMeasurer, "measure", "measure")
timed(I.WorkerMeasurer, "close", "close")
timed(T._Session, "__init__", "session_init")
timed(T._Session, "originals", "compile_originals")
timed(T._Session, "request", "request")
timed(T._FrontEnd, "of", "front_end")
work = registry()
launches = [work[k].make(work[k].default_size, seed=1) for k in ("maxpool", "upsample")]
print("input bytes", sum(a.nbytes for l in launches for a in l.args if hasattr(a, "nbytes") and hasattr(a, "data")))
for iso in (True, False):
    acc.clear(); t = time.perf_counter()
    tune(launches, TuneSettings(neighbour_caps=False, isolate=iso), use_cache=False, progress=False)
    print("isolate", iso, "wall", round(time.perf_counter() - t, 2), {k: round(v, 2) for k, v in acc.items()})
t = time.perf_counter()
import subprocess
subprocess.run([sys.executable, "-c", "import hfuse.tuning.worker, hfuse.tuning.measure, cupy; cupy.zeros(1)"])
print("bare worker import + context", round(time.perf_counter() - t, 2))
