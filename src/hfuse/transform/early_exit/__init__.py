"""EarlyExitRewrite: an early ``return`` must not leave a named barrier waiting forever.

Natively, ``if (i >= n) return;`` followed by ``__syncthreads()`` works: threads that
exited no longer count. A fused part synchronises on a named barrier (``barrier.sync
ID, N``) that waits for N threads, counted by warps: a warp arrives once all its
*non-exited* threads have executed the barrier (PTX ISA, ``barrier``). So a thread that
exits is harmless as long as its warp keeps a thread that arrives, but a warp whose
threads all left never arrives and the part hangs. This rewrite makes the shapes below
safe and refuses everything else with the lines involved: it never emits a hang.

**The flag.** From the first early return that comes before a barrier on, the function
runs as a *region*: ``bool hf_active = true;`` and each guard ``if (cond) return;``
becomes ``if (hf_active && (cond)) hf_active = false;``. In the region

- work (statements that reach no barrier) runs only while the flag holds:
  ``if (hf_active) { ... }``; declarations that later statements use are hoisted out of
  it (``const`` dropped from a hoisted scalar);
- barriers stay where they are and every thread still reaching the region executes them:
  ``__syncthreads();`` alone, ``block.sync();``, ``cg::sync(block);`` (or ``sync(block);``
  after ``using namespace cooperative_groups;``), ``cg::wait(block);`` (a thread that copied
  nothing waits for nothing, then meets the others);
- ``__syncthreads_count/or(p)`` become ``...(hf_active && (p))`` and
  ``__syncthreads_and(p)`` ``...(!hf_active || (p))``: threads that returned count as
  natively, not at all;
- **loops and ``if``s that reach a barrier** (or hold a guard) stay control flow for
  every thread, their bodies are regions themselves (recursively), so the threads that
  returned arrive at each of the barriers the others execute, the same number of times.
  This is only correct if every thread evaluates the control identically: the loop's
  init, condition and update (the ``if``'s condition) must be *block-uniform*, proven
  by a data-flow check over the identifiers they read: built-ins other than
  ``threadIdx`` (``blockDim``, ``blockIdx``, ``gridDim``, ``warpSize``), kernel
  parameters, literals, file-scope names the function never assigns (constants,
  template parameters, enumerators), a few pure functions (``min``, ``max``, ...), the
  result of ``__syncthreads_count/and/or``, and locals whose *every* assignment reads
  only such values and runs in every thread (not in the guarded work, not under a
  condition or in a loop that is not itself block-uniform). Reading ``threadIdx``,
  memory (``a[i]``, ``*p``, ``p->x``), a local whose address is taken or that is passed
  by reference, a ``__device__`` helper's parameter, or a call hfuse cannot prove pure
  makes a value non-uniform; a ``break``/``continue``/``return`` that only some threads
  take makes the trip count non-uniform. Then hfuse refuses, naming the return, the
  loop and the value;
- declarations whose initialiser is pure (no memory read through ``a[i]``, ``*p`` or
  ``p->x``, no call but the pure ones, no assignment), and pure updates of register
  locals (``k += 2;``, ``rounds++;``), run in every thread when code outside their
  chunk of work needs them, so loop bounds such as ``const int half = blockDim.x / 2;``
  stay available and uniform; a thread that returned only computes values in its own
  registers;
- **calls of a helper that synchronises** (``h(...);``, ``x = h(...);``, ``T x =
  h(...);``, ``lhs op= h(...);``, ``return h(...);``) run in every thread: the helper's
  per-part copy (specialize.py already copies helpers that synchronise per part) takes
  the activity flag as an extra last parameter ``bool hf_caller_active = true``, and its
  whole body is a region whose flag starts as ``hf_caller_active`` -- the same rewrite,
  recursively, so it does no work, reads and writes no memory for a thread that
  returned, yet arrives at each of its barriers. The call's arguments must be pure
  (evaluated by the threads that returned too); a value stored from the result is
  stored only while the flag holds (``auto hf_ret = h(...); if (hf_active) lhs = hf_ret;``).
  The helper must have one definition, be called with all its parameters, and its own
  body must pass the same checks (its parameters count as non-uniform: callers may pass
  per-thread values); otherwise the call is refused.

**Warps.** A warp-synchronous operation with a full mask (``__shfl_xor_sync(~0u, ...)``,
``__syncwarp()``, cooperative-groups tiles) waits for every *non-exited* thread of the
warp: natively the threads that returned had exited, in the region they are alive
(measured on an H100: such a kernel hangs). Hence, for a kernel body in horizontal
fusion (``exits=True``: a ``return`` from the body ends the thread), a guard also
lets the threads that left *exit* when their warp keeps an active thread::

    if (hf_active && (i >= n)) hf_active = false;
    if (__any_sync(0xffffffffu, hf_active) && !hf_active) return;

so a warp either has only active threads (warp operations behave as natively, exited
threads excluded) or only inactive ones (which skip all the work, warp operations
included, and keep arriving at the barriers for the warp). In vertical fusion and in
helpers a return does not end the thread, so the flag alone is used; a vertical kernel
body whose region (or a function it calls) uses a warp-synchronous operation is
refused. A guard whose condition is block-uniform stays a plain ``return`` (every
thread of the part leaves together).

Refused, with the early return's line and the offending line: a barrier reached in any
other shape (inside ``switch``, a range ``for``, an expression), a loop/``if`` around a
barrier whose control is not provably block-uniform, a return/``break``/``continue``
inside guarded work before a barrier, a value-returning guard with a thread-dependent
condition, a hoisted declaration that cannot be split (``auto``, ``constexpr``,
references, arrays, constructor arguments), ``goto``.
"""
from __future__ import annotations

from ..program_functions import Helpers, functions_of, program_helpers
from .rewrite import early_exit_edits, make_early_exits_safe
from .syntax import CALLER_FLAG, FLAG, RESULT

__all__ = [
    "CALLER_FLAG", "FLAG", "Helpers", "RESULT", "early_exit_edits", "functions_of", "make_early_exits_safe",
    "program_helpers",
]
