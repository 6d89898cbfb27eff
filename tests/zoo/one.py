"""One adapted keras.io example through tf_mgpu and through Keras, compared:
`python -m tests.zoo.one FILE OUTCOME.json`.

1. tf_mgpu trains it one epoch (4 steps of 32) on 2 logical CPU replicas of 16 and exports it,
   in float64 where the model runs in float64 (else in float32), dropout-like layers turned
   off as `check` turns them off (their masks differ per replica by design), and with
   --sync_batch_norm (BatchNormalization over the global batch, as on one device).
2. Keras's `fit` trains the same model (same seed, same dtype, randomness off) on one device at
   the global batch, on the same examples in the same order, with the example's callbacks
   and class weights.
3. The weights are compared, and `model.keras`, reloaded by Keras's `load_model` (given the
   file's own classes and functions, as a user gives them), evaluates to the run's test
   figures (or, for a model Keras cannot evaluate, predicts what the trained model predicts).

The outcome's `status` is `equal`, `replica` (not one device's, but Keras's own fit on the same
2 replicas ends with the same weights: the model computes over each replica's share, as a
loss over the whole batch does), `differs`, `random` (the model still draws random numbers in
training, so the two sides cannot be compared), `refused` (tf_mgpu's one line), or `failed`.
"""

import json
import pathlib
import sys
import tempfile
import time
import traceback

from tf_mgpu.engine.distribute import devices

devices.split_cpu(2)  # before TensorFlow makes its devices

import numpy as np  # noqa: E402

from tests.support import cpu_strategy  # noqa: E402
from tests.zoo import feeding  # noqa: E402
from tf_mgpu import training  # noqa: E402
from tf_mgpu.config import Config  # noqa: E402
from tf_mgpu.errors import UserError  # noqa: E402

SEED, PER_REPLICA, REPLICAS = 3, 16, 2
# Largest weight difference to one device's, per dtype: float64 sums in another order than
# one device (1e-16 a step), float32 rounds 1e-7 a step, which Adam's division can amplify.
# Relative where a weight is above 1 in size (a moving variance of raw features at 5e17).
TOLERANCE = {"float64": 1e-6, "float32": 1e-3}


def main(path: str, out: str) -> int:
    started = time.perf_counter()
    outcome = compare(pathlib.Path(path))
    outcome["seconds"] = round(time.perf_counter() - started, 1)
    pathlib.Path(out).write_text(json.dumps(outcome, indent=1) + "\n")
    return 0


def compare(path: pathlib.Path) -> dict:
    found = {"file": str(path), "source": path.read_text().splitlines()[0].split(": ", 1)[-1]}
    with tempfile.TemporaryDirectory() as folder:
        run = None
        for dtype in ("float64", "float32"):
            # Imported afresh for each run, as a user's process imports it once: a layer
            # the file makes at import (keras.io's module-level data_augmentation) is
            # built under the strategy of the run that first calls it.
            module = feeding.import_file(path)
            task, turned_off = feeding.without_randomness(module)
            found["randomness_off"] = turned_off
            config = Config(
                task=str(path),
                batch_size=PER_REPLICA,
                epochs=1,
                seed=SEED,
                model_dir=f"{folder}/{dtype}",
                jit_compile=False,
                dtype=dtype,
                sync_batch_norm=True,
            )
            try:
                run = training.run(config, task, strategy=cpu_strategy(REPLICAS))
                trained = module  # its load_data's arrays: Keras's fit reads the same
                break
            except UserError as e:
                return {**found, "status": "refused", "detail": str(e), "dtype": dtype}
            except Exception:  # float64 may not run: try float32
                if dtype == "float32":
                    return {**found, "status": "failed", "detail": _last_line(), "dtype": dtype}
        found["dtype"] = dtype
        exported = True
        try:
            found["export"] = feeding.reloaded_agrees(module, run, f"{folder}/{dtype}")
        except AssertionError:
            # The run's figures are its replicas' (a loss summed over each share): judged
            # with the weights below, which say whether the replicas computed otherwise.
            found["export"] = "figures differ from Keras evaluate's: " + _last_line()
            exported = False
            try:  # Keras's own evaluate on the same 2 replicas: an own test_step's figures
                strategy = cpu_strategy(REPLICAS)
                says = feeding.reloaded_agrees(module, run, f"{folder}/{dtype}", strategy)
                found["export"] = f"{says} on 2 replicas, not on one device"
                exported = "replica"
            except Exception:  # not Keras evaluate's figures on 2 replicas either
                try:  # Keras's figures but for a test_step's own loss, which Keras divides
                    says = feeding.reloaded_agrees(
                        module, run, f"{folder}/{dtype}", divided=REPLICAS
                    )
                    found["export"] = (
                        f"{says} on one device; its test_step reports a Keras loss, which "
                        f"Keras divides by the {REPLICAS} replicas"
                    )
                    exported = "replica"
                except Exception:
                    pass
        except Exception:
            return {**found, "status": "failed", "detail": "reload: " + _last_line()}
        try:
            module = feeding.import_file(path)
            task, _ = feeding.without_randomness(module)
            fitted, random = feeding.keras_fit(
                module, task, dtype, run.summary["global_batch"], splits=trained.load_data()
            )
        except Exception:
            return {**found, "status": "failed", "detail": "Keras fit: " + _last_line()}
    found["difference"] = difference = _largest(run.state.model.weights, fitted)
    if difference <= TOLERANCE[dtype]:
        if not exported:  # one device's weights, but not its figures: the export's fault
            return {**found, "status": "failed", "detail": found["export"]}
        if exported == "replica":  # figures of each share, as Keras's evaluate on 2 replicas
            detail = "weights equal fit's; its test figures are Keras's on 2 replicas"
            return {**found, "status": "replica", "detail": f"{detail} ({found['export']})"}
        return {**found, "status": "equal"}
    if random:
        return {**found, "status": "random", "detail": f"its step runs {', '.join(random)}"}
    # Not one device's: is it what Keras's own fit does on the same 2 replicas?
    try:
        strategy = cpu_strategy(REPLICAS)
        module = feeding.import_file(path)
        task, _ = feeding.without_randomness(module)
        two, _ = feeding.keras_fit(
            module, task, dtype, run.summary["global_batch"], strategy, trained.load_data()
        )
    except Exception:
        return {**found, "status": "differs", "detail": "Keras fit on 2 replicas: " + _last_line()}
    found["difference_fit_2"] = _largest(run.state.model.weights, two)
    if found["difference_fit_2"] <= TOLERANCE[dtype]:
        detail = "equals Keras fit on 2 replicas: the model computes over each replica's share"
        return {**found, "status": "replica", "detail": detail}
    return {**found, "status": "differs"}


def _largest(weights, others) -> float:
    """The largest difference between the trained weights and `others`: absolute, or relative
    to the weight where it is above 1 in size."""

    def apart(a, b) -> float:
        a, b = np.asarray(a.numpy(), np.float64), np.asarray(b, np.float64)
        return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b))))

    return max(
        (apart(a, b) for a, b in zip(weights, others, strict=True) if np.size(b)),
        default=0.0,
    )


def _last_line() -> str:
    lines = traceback.format_exc().strip().splitlines()
    return lines[-1][:400]


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
