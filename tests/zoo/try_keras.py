"""An adapted keras.io example run as Keras alone runs it: `python -m tests.zoo.try_keras FILE`.

`fit` for one epoch on one device at batch 32, `model.save`, then `keras.saving.load_model`
(given the file's own classes and functions, as a user gives them), and `evaluate` of both.
Prints the figures, the seconds each part took, and exits 1 if the reloaded model evaluates
otherwise. A model Keras cannot evaluate (its own train_step makes the loss, and it has no
compiled loss, add_loss or test_step) is compared weight by weight instead.
"""

import importlib.util
import inspect
import os
import pathlib
import sys
import tempfile
import time

import keras
import numpy as np
import tensorflow as tf


def import_file(path: str):
    name = "zoo_" + pathlib.Path(path).stem
    spec = importlib.util.spec_from_file_location(name, os.path.abspath(path))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def own_objects(module) -> dict:
    return {
        name: value
        for name, value in vars(module).items()
        if (inspect.isfunction(value) or inspect.isclass(value))
        and value.__module__ == module.__name__
    }


def fit_arguments(split) -> dict:
    if isinstance(split, tf.data.Dataset):
        return {"x": split.batch(32)}
    x, y, *w = split
    given = {"x": x, "y": y, "batch_size": 32}
    if w:
        given["sample_weight"] = w[0]
    return given


def main(path: str) -> int:
    started = time.perf_counter()
    module = import_file(path)
    keras.utils.set_random_seed(3)
    model = module.build_model()
    train, *_, test = module.load_data()
    built = time.perf_counter()
    weight = getattr(module, "CLASS_WEIGHT", None)
    extra = {"class_weight": weight} if weight else {}
    model.fit(**fit_arguments(train), epochs=1, shuffle=False, verbose=0, **extra)
    fitted = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        file = os.path.join(folder, "model.keras")
        model.save(file)
        again = keras.saving.load_model(file, custom_objects=own_objects(module))
    try:
        says = model.evaluate(**fit_arguments(test), return_dict=True, verbose=0)
    except (ValueError, NotImplementedError) as e:  # no loss, test_step or call: fit only
        print(f"evaluate: {str(e).splitlines()[0][:120]} (weights compared instead)")
        says = None
    done = time.perf_counter()
    print(
        f"seconds: build+data {built - started:.1f}  fit {fitted - built:.1f}  "
        f"evaluate+save+reload {done - fitted:.1f}  parameters {model.count_params():,}"
    )
    if says is None:
        for a, b in zip(model.weights, again.weights, strict=True):
            if not np.array_equal(np.asarray(a), np.asarray(b)):
                print(f"the reloaded model's {a.path} differs")
                return 1
        return 0
    reloaded = again.evaluate(**fit_arguments(test), return_dict=True, verbose=0)
    print(f"evaluate {says}")
    print(f"reloaded {reloaded}")
    differs = [
        key
        for key in says
        if key in reloaded and not np.isclose(says[key], reloaded[key], rtol=1e-5, atol=1e-6)
    ]
    if differs:
        print(f"the reloaded model evaluates otherwise: {differs}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
