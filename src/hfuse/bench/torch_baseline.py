"""PyTorch's own operators on the same inputs as our deep-learning kernels, on two streams.

For a deep-learning pair this gives a third reference beside "our two kernels on two
streams" and "our fused kernel": what a PyTorch program gets from its library operators
launched on two streams. The operators, on the very same device arrays (zero-copy views
through DLPack / ``__cuda_array_interface__``):

============  ==========================================================================
kernel        PyTorch operator
============  ==========================================================================
maxpool       ``F.max_pool2d(x, k, s, p, d, return_indices=True)`` (values + argmax)
batchnorm     ``torch.var_mean(x, dim=(0, 2), correction=0)`` (the statistics pass)
upsample      ``F.interpolate(x, size=(oh, ow), mode="bilinear", align_corners=...)``
im2col        ``F.unfold(image[None], k, dilation, padding, stride)``
hist          ``torch.histc(data, bins, min, max)``
============  ==========================================================================

Timing uses the project's ``Timer`` (``hfuse.runtime.timing``), so it is measured exactly
like the native baseline: warm-up by time, L2 flushed (2x its size written) before each
repetition, CUDA events around the work on the timer's stream, median of the repetitions.
The timer's CuPy stream is wrapped as a ``torch.cuda.ExternalStream``; each repetition
records a fork event on it, runs operator 1 on side stream 1 and operator 2 on side
stream 2 (each waits on the fork), and the timer's stream waits on both join events, so
the interval is first launch to last finish, as for ``time_two_streams``. PyTorch's
caching allocator serves the operators' outputs; its allocations are warm after the
first repetitions (the warm-up), so they are not measured. Operator outputs are not
compared with our kernels (PyTorch's semantics are slightly different: ``histc``
returns float counts; ``var_mean`` is the same statistics computed another way).

``time_torch_compiled_pair`` is the PyTorch user's own horizontal fusion: the two
operators in one function under ``torch.compile`` with Inductor's combo kernels switched
on (``torch._inductor.config.combo_kernels``: independent kernels of one graph generated
as one), timed the same way on one stream.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from ..launch import KernelLaunch

TORCH_OPERATORS = {
    "maxpool": "torch.nn.functional.max_pool2d(return_indices=True)",
    "batchnorm": "torch.var_mean(dim=(0, 2), correction=0)",
    "upsample": "torch.nn.functional.interpolate(mode='bilinear')",
    "im2col": "torch.nn.functional.unfold",
    "hist": "torch.histc",
}


def _tensor(torch: Any, array: Any) -> Any:
    """A torch view of a CuPy array (no copy)."""
    try:
        return torch.from_dlpack(array)
    except Exception:
        return torch.as_tensor(array, device="cuda")


def torch_operator(kind: str, launch: KernelLaunch) -> Callable[[], Any]:
    """A zero-argument callable running PyTorch's operator for ``kind`` on ``launch``'s
    inputs (on torch's current stream). Argument positions: see ``workloads/dl.py``."""
    import torch
    import torch.nn.functional as F

    a = launch.args
    if kind == "maxpool":
        x = _tensor(torch, a[0])
        kh, kw, sh, sw, ph, pw, dh, dw = (int(v) for v in a[8:16])
        return lambda: F.max_pool2d(x, (kh, kw), (sh, sw), (ph, pw), (dh, dw), return_indices=True)
    if kind == "batchnorm":
        x = _tensor(torch, a[0])
        return lambda: torch.var_mean(x, dim=(0, 2), correction=0)
    if kind == "upsample":
        x = _tensor(torch, a[0])
        oh, ow, ac = int(a[5]), int(a[6]), bool(int(a[7]))
        return lambda: F.interpolate(x, size=(oh, ow), mode="bilinear", align_corners=ac)
    if kind == "im2col":
        img = _tensor(torch, a[0]).unsqueeze(0)
        kh, kw, ph, pw, sh, sw, dh, dw = (int(v) for v in a[5:13])
        return lambda: F.unfold(img, (kh, kw), dilation=(dh, dw), padding=(ph, pw), stride=(sh, sw))
    if kind == "hist":
        data = _tensor(torch, a[0])
        nbins, lo, hi = int(a[3]), float(a[4]), float(a[5])
        return lambda: torch.histc(data, bins=nbins, min=lo, max=hi)
    raise ValueError(f"no PyTorch operator for '{kind}' (deep-learning kernels only: {', '.join(TORCH_OPERATORS)})")


class TwoStreamOps:
    """Runs operators on their own torch streams, forked from and joined to a main stream."""

    def __init__(self, ops: Sequence[Callable[[], Any]]):
        import torch

        self.torch = torch
        self.ops = list(ops)
        self.streams = [torch.cuda.Stream() for _ in self.ops]
        self.fork = torch.cuda.Event()
        self.joins = [torch.cuda.Event() for _ in self.ops]

    def __call__(self, main: Any) -> None:
        torch = self.torch
        self.fork.record(main)
        for op, stream, join in zip(self.ops, self.streams, self.joins):
            stream.wait_event(self.fork)
            with torch.cuda.stream(stream):
                op()
            join.record(stream)
        for join in self.joins:
            main.wait_event(join)


def time_torch_pair(
    kinds: Sequence[str],
    launches: Sequence[KernelLaunch],
    *,
    warmup_ms: float = 25.0,
    rep_ms: float = 100.0,
    flush_l2: bool = True,
    alone: bool = True,
) -> dict[str, Any]:
    """PyTorch's operators for ``kinds`` on ``launches``' inputs.

    Returns ``{"two_streams": Timing, "alone": [Timing, ...] (if alone), "operators": [...]}``.
    """
    import torch

    from ..runtime.timing import Timer

    timer = Timer(flush_l2=flush_l2)
    main = torch.cuda.ExternalStream(timer.stream.ptr)
    ops = [torch_operator(k, l) for k, l in zip(kinds, launches)]
    result: dict[str, Any] = {"operators": [TORCH_OPERATORS[k] for k in kinds]}

    def on_main(fn: Callable[[], Any]) -> Callable[[], None]:
        def run() -> None:
            with torch.cuda.stream(main):
                fn()
        return run

    if alone:
        result["alone"] = [timer.time(on_main(op), warmup_ms=warmup_ms, rep_ms=rep_ms) for op in ops]
    pair = TwoStreamOps(ops)
    result["two_streams"] = timer.time(lambda: pair(main), warmup_ms=warmup_ms, rep_ms=rep_ms)
    torch.cuda.synchronize()
    return result


def time_torch_compiled_pair(
    kinds: Sequence[str],
    launches: Sequence[KernelLaunch],
    *,
    warmup_ms: float = 25.0,
    rep_ms: float = 100.0,
    flush_l2: bool = True,
) -> dict[str, Any]:
    """The operators for ``kinds`` in one ``torch.compile``d function, with Inductor's
    combo kernels on. Returns ``{"compiled": Timing, "torch": version}``; raises if this
    PyTorch has no combo kernels (the caller records why the column is empty)."""
    import torch
    import torch._inductor.config as inductor

    from ..runtime.timing import Timer

    ops = [torch_operator(k, l) for k, l in zip(kinds, launches)]

    def both() -> Any:
        return tuple(op() for op in ops)

    with inductor.patch({"combo_kernels": True}):
        compiled = torch.compile(both)
        compiled()  # compiled here, under the patch: Inductor reads its config when it generates code
        torch.cuda.synchronize()
    timer = Timer(flush_l2=flush_l2)
    main = torch.cuda.ExternalStream(timer.stream.ptr)

    def run() -> None:
        with torch.cuda.stream(main):
            compiled()

    timing = timer.time(run, warmup_ms=warmup_ms, rep_ms=rep_ms)
    torch.cuda.synchronize()
    return {"compiled": timing, "torch": torch.__version__}
