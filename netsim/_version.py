"""netsim's version (one place: setup.cfg reads it too) and the versions a run's numbers depend on."""
from __future__ import annotations

import functools
import hashlib
import platform
from importlib import metadata

__version__ = "0.1.0"

#: the packages whose arithmetic a run's numbers depend on, recorded in summary.json
NUMERIC_PACKAGES = ("torch", "numpy", "scipy")


def environment() -> dict[str, str]:
    """netsim's, Python's and :data:`NUMERIC_PACKAGES`' versions, torch's CPU kernel level
    (e.g. ``AVX512``) and :func:`blas_signature`: a run is bit-identical to another with the
    same config, seed, thread count and these values (requirements.lock fixes the packages)."""
    import torch

    return {"netsim": __version__, "python": platform.python_version(),
            **{name: metadata.version(name) for name in NUMERIC_PACKAGES},
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "blas": blas_signature()}


@functools.lru_cache(maxsize=1)
def blas_signature() -> str:
    """12 hex digits of a hash of the bits of a few CPU products in the shapes runs use, on one
    thread: dense mixing ``P @ z`` of 20 and 100 clients' models (float32, up to 38,480
    parameters a client), the push-sum weights' ``P @ w`` (float64), batched MLP products and a
    small 2-d and 1-d convolution with their gradients. torch's BLAS (MKL) and oneDNN choose
    kernels by CPU model, not only by kernel level: two AVX512 machines were seen to round
    SGP's mixing of 38,480-wide rows differently (one ulp, enough to move PDBO's learned weights),
    so two runs are comparable bit for bit only where this value is the same too."""
    import torch
    import torch.nn.functional as F

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        g = torch.Generator().manual_seed(0)

        def r(*shape, dtype=torch.float32):
            return torch.rand(shape, generator=g, dtype=torch.float64).to(dtype) - 0.5

        with torch.no_grad():
            outs = [r(n, n) @ r(n, d) for n, d in ((20, 4_810), (20, 38_480), (100, 9_610))]
            outs += [r(n, n, dtype=torch.float64) @ r(n, 1, dtype=torch.float64)
                     for n in (20, 100)]
            x, w = r(8, 32, 64), r(8, 64, 128)
            outs += [torch.bmm(x, w), torch.bmm(x.transpose(1, 2), r(8, 32, 128))]
        for conv, x, w in ((F.conv2d, r(4, 3, 32, 32), r(8, 3, 5, 5)),
                           (F.conv1d, r(4, 1, 40), r(25, 1, 5))):
            w.requires_grad_(True)
            y = conv(x, w, stride=2)
            (gw,) = torch.autograd.grad((y * y).sum(), [w])
            outs += [y.detach(), gw]
    finally:
        torch.set_num_threads(threads)
    h = hashlib.sha256()
    for t in outs:
        h.update(t.contiguous().numpy().tobytes())
    return h.hexdigest()[:12]
