"""Row copies of stacked client state by index (``dst[index] = src`` along the first dimension),
exact and fast on the CPU.

On the CPU, torch 2.13's ``index_copy_`` and ``index_put_`` move every element through an index
computation. Copying 48 rows of 9,610 float32 values took 157 us that way, timed alone on one
thread, against 55 us for ``index_add_`` (which also reads the rows it adds to). numpy's fancy
assignment copies row by row and took 46 us. numpy copies on one thread, though, and torch's copy
splits a large one over its threads: at two threads, 500 rows of 4,875 float64 (19.5 MB) took
2.0 ms with numpy against 1.3 ms, while 100 of them took 0.12 against 0.19 ms.
:func:`copy_rows` uses numpy where it can view both tensors (CPU, a dtype numpy has, no autograd
history) and the copy is at most :data:`NUMPY_MAX_BYTES` or torch runs one thread, else
``index_copy_``. Both copy the same bits.
"""
from __future__ import annotations

import numpy as np
import torch
from torch import Tensor

#: dtypes numpy views without conversion
NUMPY_DTYPES = frozenset({torch.float16, torch.float32, torch.float64, torch.int8, torch.int16,
                          torch.int32, torch.int64, torch.uint8, torch.bool})
#: largest copy (bytes of ``src``) taken by numpy when torch runs several threads
NUMPY_MAX_BYTES = 8 << 20


def copy_rows(dst: Tensor, index: Tensor | np.ndarray, src: Tensor) -> Tensor:
    """``dst[index[k]] = src[k]`` for every k, in place (``index_copy_(0, index, src)``: distinct
    indices, ``src`` of ``dst``'s dtype); returns ``dst``."""
    if (dst.device.type == "cpu" and src.device.type == "cpu" and dst.dtype == src.dtype
            and dst.dtype in NUMPY_DTYPES and not dst.requires_grad
            and (src.numel() * src.element_size() <= NUMPY_MAX_BYTES
                 or torch.get_num_threads() == 1)):
        at = index.numpy() if isinstance(index, Tensor) else np.asarray(index)
        dst.numpy()[at] = src.detach().numpy()
        return dst
    return dst.index_copy_(0, torch.as_tensor(index, device=dst.device), src)
