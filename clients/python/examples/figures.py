"""What the examples draw: PNG figures with matplotlib, imported only when a figure is asked for."""
from __future__ import annotations

from typing import Sequence


def costs(values: Sequence[float], title: str, path: str) -> None:
    """The cost per iteration, log scale, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    figure, axes = pyplot.subplots(figsize=(6, 4))
    axes.semilogy(range(len(values)), values, marker="o")
    axes.set_xlabel("iteration")
    axes.set_ylabel("cost")
    axes.set_title(title)
    axes.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    pyplot.close(figure)
