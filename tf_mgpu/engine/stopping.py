"""SIGTERM and SIGINT: stop at the next step boundary, every worker at the same one, saved.

Orchestrators stop jobs with SIGTERM (Kubernetes pod deletion, `scancel`,
spot-instance preemption notices) and people with Ctrl-C. Before training
starts there is nothing to save: the signal ends the process at once, with its line. During
training the handler only records the signal; between two compiled calls
the loop asks `Stop.agreed`, saves a checkpoint and ends with
`errors.Stopped` (exit 75).

Under MultiWorkerMirroredStrategy a signal may reach one worker only. Each
worker then adds its own "stop requested" to a one-number all-reduce after
every call, so all of them see the request after the same call, save the
same checkpoint together and stop. TensorFlow's PreemptionCheckpointHandler
does the same through its coordination service; this is the same idea on
the collective the loop already uses, and it knows our step boundaries.

TensorFlow installs its own SIGTERM handler while MultiWorkerMirroredStrategy
starts (it logs "SIGTERM caught" and carries on), so `start_training`
installs ours again afterwards.
"""

import os
import signal
import sys

from tf_mgpu import errors
from tf_mgpu.errors import Stopped

_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class Stop:
    """Records SIGTERM/SIGINT; ends the run at once before training, at a boundary during it."""

    def __init__(self):
        self.requested: str | None = None
        self._training = False
        self._agree = None

    def install(self) -> None:
        for number in _SIGNALS:
            signal.signal(number, self._handle)

    def start_training(self, strategy, multi_worker: bool) -> None:
        """From now on a signal waits for the next step boundary; call after the strategy exists."""
        if multi_worker:
            self._agree = _any_worker(strategy)
        self._training = True
        self.install()
        if self.requested:  # arrived while TensorFlow's handler was installed, or just now
            raise Stopped(self._before_training())

    def agreed(self) -> bool:
        """Whether any worker was asked to stop; collective under MultiWorkerMirroredStrategy."""
        local = self.requested is not None
        if self._agree is None:
            return local
        # Decide on the all-reduced value only: a signal that lands during the
        # collective must wait for the next boundary, or this worker would stop
        # alone while the others train on (and their next collective fails).
        agreed = self._agree(float(local)) > 0
        if agreed and not local:
            self.requested = self.requested or "a signal to another worker"
        return agreed

    def _handle(self, number: int, frame) -> None:
        del frame
        self.requested = self.requested or signal.Signals(number).name
        if not self._training:
            # Exit here rather than raise: the signal may land anywhere, and code it
            # lands in may catch the exception and raise another (TensorFlow's import
            # turns it into "TypeError: unsupported callable", with a traceback).
            print(errors.line(Stopped(self._before_training())), file=sys.stderr, flush=True)
            os._exit(errors.EXIT_STOPPED)

    def _before_training(self) -> str:
        return f"{self.requested} before training started; nothing to save"


def _any_worker(strategy):
    """The sum over every replica of each worker's flag (see `strategies.replica_sum`)."""
    from tf_mgpu.engine import strategies  # here, so main can install the handlers before TF loads

    total = strategies.replica_sum(strategy)
    return lambda flag: float(total(flag))
