"""Check one fused kernel against its originals on the GPU, in one call.

``hfuse fuse ... --verify`` and ``hfuse.verify(...)``: the fusion is generated, compiled
and run once in an isolated worker (``backends``), and each output must equal the
originals' bit for bit, from the same initial contents. The inputs are the user's
(``launches``: ``KernelLaunch`` values, as ``hfuse tune`` takes them) or generated from
the kernels' parameters (``GeneratedInputs``):

- a pointer to a number type (``const float*``, ``int*``, ``half2*``, ...) is an array of
  ``size * size`` elements (a 2-D index of two size parameters stays in range): random
  values in [-1, 1) for floating types, in [0, 16) for integer types (small: values used
  as indices stay in range); a pointer that is not ``const`` is compared as an output;
- an integer parameter is ``size``, a floating one 0.5, a ``bool`` true;
- the grid is one-dimensional and covers ``size * size`` threads (at most 4096 blocks);
  no dynamic shared memory.

Generated inputs are a guess at what the kernels expect: anything hfuse cannot guess (a
struct, a pointer to a pointer, a type it does not know, dynamic shared memory) is an
error that says which parameter of which kernel and to give inputs instead; an original
kernel that faults or hangs on them is reported as such, and nothing is called verified.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

import numpy as np

from ..api import FusedKernel, device_source, prepare
from ..errors import HFuseError, Location
from ..frontend.options import NO_OPTIONS, CompileOptions
from ..fusion import Fusion
from ..launch import KernelLaunch, Output
from ..spec import Dim3, KernelSpec
from .backends import MeasureBackend, default_backend
from .candidates import Candidate
from .plan import CandidateResult

_NUMBER_TYPES: dict[str, tuple[str, int]] = {
    # C type -> (NumPy dtype of one element, elements per value)
    "float": ("f4", 1),
    "double": ("f8", 1),
    **{t: ("f2", 1) for t in ("half", "__half")},
    **{t: ("bf16", 1) for t in ("__nv_bfloat16", "nv_bfloat16")},
    **{t: ("f2", 2) for t in ("half2", "__half2")},
    **{t: ("bf16", 2) for t in ("__nv_bfloat162", "nv_bfloat162")},
    **{f"float{n}": ("f4", n) for n in (1, 2, 3, 4)},
    **{f"double{n}": ("f8", n) for n in (1, 2, 3, 4)},
    **{f"int{n}": ("i4", n) for n in (1, 2, 3, 4)},
    **{f"uint{n}": ("u4", n) for n in (1, 2, 3, 4)},
    **{f"char{n}": ("i1", n) for n in (1, 2, 3, 4)},
    **{f"uchar{n}": ("u1", n) for n in (1, 2, 3, 4)},
    **{f"short{n}": ("i2", n) for n in (1, 2, 3, 4)},
    **{f"ushort{n}": ("u2", n) for n in (1, 2, 3, 4)},
    **{f"longlong{n}": ("i8", n) for n in (1, 2)},
    **{f"ulonglong{n}": ("u8", n) for n in (1, 2)},
    "char": ("i1", 1), "signed char": ("i1", 1), "unsigned char": ("u1", 1), "int8_t": ("i1", 1),
    "uint8_t": ("u1", 1), "bool": ("u1", 1),
    "short": ("i2", 1), "unsigned short": ("u2", 1), "int16_t": ("i2", 1), "uint16_t": ("u2", 1),
    "int": ("i4", 1), "signed": ("i4", 1), "signed int": ("i4", 1), "unsigned": ("u4", 1),
    "unsigned int": ("u4", 1), "int32_t": ("i4", 1), "uint32_t": ("u4", 1),
    "long": ("i8", 1), "long int": ("i8", 1), "unsigned long": ("u8", 1), "long long": ("i8", 1),
    "long long int": ("i8", 1), "unsigned long long": ("u8", 1), "unsigned long long int": ("u8", 1),
    "int64_t": ("i8", 1), "uint64_t": ("u8", 1), "size_t": ("u8", 1), "ptrdiff_t": ("i8", 1),
}
_EXTERN_SHARED = re.compile(r"\bextern\s+__shared__\b")
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict|struct|__grid_constant__)\b")


@dataclass(frozen=True)
class ParamPlan:
    """How one kernel parameter is made: an array (``pointer``) or a scalar."""

    declaration: str
    base: str
    """The element's C type (``float``, ``half2``, ``bool``)."""
    dtype: str
    """A NumPy dtype string, or ``bf16`` (bfloat16: made as its 16 bits)."""
    lanes: int
    pointer: bool
    output: bool
    """A pointer to non-const data: compared after the run."""


def plan_parameter(declaration: str, name: str, where: Location) -> ParamPlan:
    """How to make the parameter ``declaration`` (``const float* __restrict__ x``)."""
    text = declaration.strip()
    array = re.search(r"\[\s*\]\s*$", text)  # float x[] is float* x
    if array:
        text = text[: array.start()].rstrip()
    if name and text.endswith(name):
        text = text[: -len(name)]
    text = text.strip() + ("*" if array else "")
    stars = text.count("*") + text.count("&")
    const = bool(re.search(r"\bconst\b", text.split("*")[0])) if stars else False
    base = " ".join(_QUALIFIERS.sub(" ", text.replace("*", " ").replace("&", " ")).split())
    base = base.removeprefix("::").removeprefix("std::")
    if "&" in text or stars > 1 or base not in _NUMBER_TYPES:
        raise HFuseError(f"cannot generate an input for parameter '{declaration.strip()}' (a type hfuse does not "
                         "know how to fill)", where,
                         hint="verify with your own inputs: a launches function returning [hfuse.KernelLaunch, ...]")
    dtype, lanes = _NUMBER_TYPES[base]
    return ParamPlan(declaration.strip(), base, dtype, lanes, pointer=stars == 1, output=stars == 1 and not const)


@dataclass(frozen=True)
class GeneratedInputs:
    size: int = 256
    seed: int = 0

    def launches(self, fused: FusedKernel, specs: Sequence[KernelSpec], device_sources: Sequence[str]) -> list[KernelLaunch]:
        """One launch per original kernel, on arrays made on this GPU (CuPy); ``device_sources``:
        each kernel's device code (``api.device_source``), to see whether it needs dynamic shared memory."""
        import cupy

        rng = cupy.random.RandomState(self.seed)
        elements = self.size * self.size
        out = []
        for spec, signature, source in zip(specs, fused.signatures, device_sources):
            where = Location(spec.file, None, spec.instance)
            if _EXTERN_SHARED.search(source):
                raise HFuseError("the kernel uses dynamic shared memory (extern __shared__), whose size its launch "
                                 "says: inputs cannot be generated for it", where,
                                 hint="verify with your own inputs: a launches function returning [hfuse.KernelLaunch, ...]")
            args: list[Any] = []
            outputs = []
            for index, (declaration, name) in enumerate(zip(signature.params, signature.names)):
                plan = plan_parameter(declaration, name, where)
                args.append(_array(cupy, rng, plan, elements) if plan.pointer else _scalar(plan, self.size))
                if plan.output:
                    outputs.append(Output(index, "exact"))
            blocks = min(4096, -(-elements // spec.block.size))
            out.append(KernelLaunch(spec, args, outputs, grid=Dim3(blocks), label=spec.name))
        return out


def _array(cupy: Any, rng: Any, plan: ParamPlan, elements: int) -> Any:
    count = elements * plan.lanes
    if plan.dtype == "bf16":  # bfloat16: the upper half of a float32
        wide = rng.uniform(-1.0, 1.0, count, dtype=cupy.float32)
        return (wide.view(cupy.uint32) >> 16).astype(cupy.uint16)
    dtype = np.dtype(plan.dtype)
    if dtype.kind == "f":
        return rng.uniform(-1.0, 1.0, count).astype(dtype)
    return rng.randint(0, 16, count).astype(dtype)


def _scalar(plan: ParamPlan, size: int) -> Any:
    if plan.lanes != 1 or plan.dtype == "bf16":
        raise HFuseError(f"cannot generate a value for parameter '{plan.declaration}' (passed by value)",
                         hint="verify with your own inputs")
    dtype = np.dtype(plan.dtype)
    if plan.base == "bool":
        return np.bool_(True)
    return dtype.type(0.5) if dtype.kind == "f" else dtype.type(size)


@dataclass
class Verification:
    """What one check of a fused kernel found."""

    result: CandidateResult
    inputs: str
    """Which inputs it ran on (the user's, or generated: their size and seed)."""
    notes: list[str] = field(default_factory=list)

    @property
    def verified(self) -> bool:
        return self.result.verified


def verify(specs: Sequence[KernelSpec], fusion: Fusion, launches: Sequence[KernelLaunch] | None = None, *,
           options: CompileOptions | None = None, inputs: GeneratedInputs = GeneratedInputs(),
           backend: MeasureBackend | None = None, barrier_form: str = "barrier", name: str | None = None,
           expected_source: str | None = None) -> Verification:
    """Generates ``fusion`` of ``specs``, runs it once beside the originals and compares
    every output bit for bit (``launches``: the inputs; None: generated). ``expected_source``:
    the fused file being checked (``hfuse fuse`` just wrote it): what is generated here must
    be that text, or nothing is run."""
    from .tuner import TuneSettings, _FrontEnd, _Session
    from .progress import Progress

    backend = backend or default_backend(True)
    limits = backend.device_limits()
    options = options or NO_OPTIONS
    if launches is None:
        device = options.with_arch(limits.arch)
        fused = prepare(list(specs), options=device).emit(fusion, name=name, barrier_form=barrier_form)  # type: ignore[arg-type]
        sources = [device_source(s, options=device).source for s in specs]
        launches = inputs.launches(fused, specs, sources)
        described = f"generated (size {inputs.size}, seed {inputs.seed})"
    else:
        described = "given"
    front_end = _FrontEnd.of(launches, options, limits)
    session = _Session(launches, TuneSettings(barrier_form=barrier_form), Progress(enabled=False), front_end)
    candidate = Candidate(fusion, "verify")
    made = session.build(candidate, name)
    if expected_source is not None and made.fused.source != expected_source:
        raise HFuseError("the fused file checked is not what these kernels generate for this GPU's device pass "
                         f"({limits.arch})", hint="fuse with -arch matching the GPU, or verify the file hfuse writes now")
    request = replace(session.request(candidate, made), timed=False)
    with backend.open(session.inputs("")) as measurer:
        run_once = getattr(measurer, "run_once", None)
        if run_once is not None:
            try:
                run_once(session.originals())
            except HFuseError as err:
                raise HFuseError(f"the original kernels fail on these inputs, so nothing was verified: {err.message}",
                                 hint="verify with your own inputs (a launches function)") from err
        result = measurer.measure(request)
    return Verification(result, described, list(front_end.unit.notes))
