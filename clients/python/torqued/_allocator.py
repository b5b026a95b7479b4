"""Client(keep_freed_memory=True): glibc's malloc told to keep freed memory, as the server is.

Process-wide and for good, so only on the caller's request: importing torqued or making a Client
without it leaves the allocator alone."""

from __future__ import annotations

import ctypes
import threading

_malloc_kept = False
_malloc_lock = threading.Lock()


def keep_freed_memory() -> None:
    """glibc keeps freed memory for reuse rather than handing it back at every free: the
    thresholds torqued's server sets (mallopt M_MMAP_THRESHOLD 32 MiB, M_TRIM_THRESHOLD
    256 MiB). Once per process; nothing where the C library is not glibc."""
    global _malloc_kept
    with _malloc_lock:
        if _malloc_kept:
            return
        _malloc_kept = True
        try:
            mallopt = ctypes.CDLL(None).mallopt
        except (OSError, AttributeError):
            return
        mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
        m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
        mallopt(m_mmap_threshold, 32 << 20)
        mallopt(m_trim_threshold, 256 << 20)
