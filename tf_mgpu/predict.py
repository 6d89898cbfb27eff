"""Prints the digit an exported model sees in each image, and its probability.

  python -m tf_mgpu.predict --model=/tmp/tf_mgpu a.png b.png
  a.png: 7 (p=0.998)
  b.png: 2 (p=0.951)

--model takes a run's --model_dir (its model.keras is read), a .keras file
or a SavedModel folder. Each image is a PNG (or any file Pillow reads):
28x28 greyscale with a white digit on black, as MNIST draws them, is used
as is. Any other is converted: transparency laid over white, colour to
greyscale, and an image whose border is light on average (a dark digit on
white paper) is INVERTED to MNIST's white on black; then it is resized to
fit 28x28 keeping its aspect ratio, and padded with black to 28x28.
Nothing is cropped or centred: frame the digit as MNIST does, about 20x20
pixels in the middle of 28x28. An image that cannot be read is one line
and exit code 3, before the model loads.
"""

# The only module that reads these flags; tf_mgpu.images and tf_mgpu.outputs.export do the work.

import sys

import numpy as np
from absl import app, flags

from tf_mgpu import cli, errors
from tf_mgpu.tasks.mnist import images

_MODEL = flags.DEFINE_string(
    "model", None, "A run's --model_dir, its model.keras, or its saved_model/ folder."
)


def predict(paths: list[str]) -> list[str]:
    """One line per image: its path, the most probable digit and its probability."""
    pixels = np.stack([images.read(path) for path in paths])
    # TensorFlow loads here, once every image has been read.
    from tf_mgpu.tasks.mnist import serving

    probabilities = serving.load(_MODEL.value)(pixels).numpy()
    return [
        f"{path}: {digit} (p={p[digit]:.3f})"
        for path, p, digit in zip(paths, probabilities, probabilities.argmax(axis=1), strict=True)
    ]


def main(argv: list[str]) -> None:
    if len(argv) < 2:
        print(
            "tf_mgpu: error: no images given; usage: python -m tf_mgpu.predict --model=PATH "
            "IMAGE.png...",
            file=sys.stderr,
        )
        sys.exit(errors.EXIT_USAGE)
    cli.quiet_tensorflow()
    cli.run(lambda: print("\n".join(predict(argv[1:]))))


if __name__ == "__main__":
    flags.mark_flag_as_required("model")
    app.run(main, flags_parser=cli.parse_flags)
