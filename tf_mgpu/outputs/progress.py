"""Progress on the chief's terminal: a live bar per epoch on a terminal, nothing extra in logs.

On a terminal the bar shows the epoch's steps, its running training loss,
examples per second over the cluster and the time left, updated after every
call of `--steps_per_loop` steps (the bar cannot move inside a compiled
call). In a log file or CI, where a redrawn bar would be noise, nothing is
drawn: the epoch line `tf_mgpu.training` prints after every epoch is the record.
"""

import shutil
import sys

from tqdm import tqdm


class Progress:
    """An epoch's bar when `enabled` and `stream` is a terminal; otherwise does nothing."""

    def __init__(self, enabled: bool, stream=None):
        self._stream = stream or sys.stdout
        self.live = enabled and self._stream.isatty()
        self._bar: tqdm | None = None

    def start_epoch(self, epoch: int, epochs: int, steps: int, done: int = 0) -> None:
        """Epoch `epoch` (from 1) of `epochs` has `steps` steps, `done` of them already."""
        if not self.live:
            return
        width = len(str(epochs))
        # A terminal that reports no size (a bare pseudo-terminal) would get a
        # zero-width bar, or none at all (tqdm hides bars below the last row).
        columns, rows = shutil.get_terminal_size((100, 24))
        self._bar = tqdm(
            total=steps,
            initial=done,
            desc=f"epoch {epoch:{width}d}/{epochs}",
            unit="step",
            file=self._stream,
            ncols=columns,
            nrows=rows,
            mininterval=0,  # updates come once per call, already sparse
            leave=False,  # the epoch line replaces it
        )

    def update(self, done: int, loss: float, examples_per_second: float) -> None:
        """`done` steps of the epoch are done; the epoch's mean loss so far is `loss`."""
        if self._bar is None:
            return
        self._bar.set_postfix_str(f"loss {loss:.4f}, {examples_per_second:,.0f} ex/s", False)
        self._bar.update(done - self._bar.n)

    def end_epoch(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
