"""GPU smoke check of the real-world corpus makers, unfused (needs a GPU, nvcc, CuPy).

    python3 tests/corpus/realworld/gpu_smoke.py BUILD_DIR [KEY ...]

Compiles every file to a cubin with its manifest flags (nvcc -arch=sm_90 -cubin), finds each
entry's kernel among the cubin's entry symbols (demangled with cu++filt), then per entry
builds inputs twice with the same seed, copies the ``symbols`` into the module's globals,
launches the kernel and checks that every output changed, holds no NaN, and is bit-for-bit
the same in both runs.  Imports only ``hfuse/spec.py`` (not the whole package), so it runs
where hfuse's own dependencies are not installed.  Also usable under
``compute-sanitizer --tool memcheck`` / ``--tool racecheck``.
"""
import os
import re
import subprocess
import sys
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
pkg = types.ModuleType("hfuse")
pkg.__path__ = [str(REPO / "src" / "hfuse")]
sys.modules["hfuse"] = pkg
sys.path[:0] = [str(REPO / "tests")]

import numpy as np  # noqa: E402
import cupy as cp  # noqa: E402

from corpus.realworld import manifest as M  # noqa: E402


def build(file: str, out: Path) -> tuple[str, Path, str]:
    cubin = out / (file.replace("/", "_") + ".cubin")
    cmd = ["nvcc", "-arch=sm_90", "-cubin", file, "-o", str(cubin), *M.flags_of(file)]
    res = subprocess.run(cmd, cwd=M.ROOT, capture_output=True, text=True)
    return file, cubin, res.stderr if res.returncode else ""


def entries(cubin: Path) -> dict[str, str]:
    """demangled name (without parameters) -> mangled, for the kernels of a cubin."""
    txt = subprocess.run(["cuobjdump", "-symbols", str(cubin)], capture_output=True, text=True).stdout
    mangled = [line.split()[-1] for line in txt.splitlines() if "STO_ENTRY" in line]
    dem = subprocess.run(["cu++filt"], input="\n".join(mangled), capture_output=True, text=True).stdout.split("\n")
    out = {}
    for m, d in zip(mangled, dem):
        d = d.strip().replace("(anonymous namespace)::", "").replace("<unnamed>::", "")
        d = re.sub(r"\((?:unsigned )?(?:int|long)\)", "", d)
        if d.startswith("void "):
            d = d[5:]
        name = d[: d.index("(")] if "(" in d else d
        name = re.sub(r"(\d+)u\b", r"\1", name.replace(" ", ""))
        out[name] = m
    return out


def main() -> int:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    only = set(sys.argv[2:])
    with ThreadPoolExecutor(16) as pool:
        built = list(pool.map(lambda f: build(f, out), M.FILES))
    cubins, failed = {}, 0
    for file, cubin, err in built:
        if err:
            print(f"BUILD FAIL {file}: {err[-2000:]}")
            failed += 1
        cubins[file] = cubin
    mods: dict[str, tuple[cp.RawModule, dict[str, str]]] = {}
    for k in M.ENTRIES:
        if only and k.key not in only:
            continue
        try:
            if k.file not in mods:
                mods[k.file] = (cp.RawModule(path=str(cubins[k.file])), entries(cubins[k.file]))
            mod, names = mods[k.file]
            want = k.kernel + (f"<{','.join(k.template_args)}>" if k.template_args else "")
            want = want.replace(" ", "")
            if want not in names:
                print(f"NO SYMBOL {k.key}: {want} not in {sorted(names)}")
                failed += 1
                continue
            fn = mod.get_function(names[want])
            results = []
            for _ in range(2):
                launch = k.make(np.random.default_rng(7), cp, k.block)
                for sym, data in launch.symbols.items():
                    ptr = mod.get_global(sym)
                    data = np.ascontiguousarray(data)
                    ptr.copy_from_host(data.ctypes.data, data.nbytes)
                before = [launch.args[i].get() for i in launch.outputs]
                fn(launch.grid.as_tuple(), k.block.as_tuple(), tuple(launch.args), shared_mem=launch.smem)
                cp.cuda.Device().synchronize()
                after = [launch.args[i].get() for i in launch.outputs]
                changed = [not np.array_equal(b, a, equal_nan=True) for b, a in zip(before, after)]
                results.append((after, changed))
            (a1, ch1), (a2, _) = results
            same = all(x.tobytes() == y.tobytes() for x, y in zip(a1, a2))
            nan = [bool(np.isnan(x.astype(np.float64)).any()) if x.dtype.kind == "f" else False for x in a1]
            status = "OK" if same and all(ch1) and not any(nan) else "BAD"
            if status == "BAD":
                failed += 1
            print(f"{status} {k.key}: deterministic={same} changed={ch1} nan={nan}")
        except Exception as exc:  # noqa: BLE001
            failed += 1
            print(f"ERROR {k.key}: {type(exc).__name__}: {exc}")
    print(f"FAILED {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
