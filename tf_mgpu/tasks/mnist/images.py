"""Image files to MNIST pixels: 28x28 uint8, a white digit on black.

MNIST draws light strokes on a black background, centred in a 28x28 frame.
A 28x28 greyscale PNG drawn that way passes through unchanged, pixel for
pixel. Anything else is converted, in this order:

1. transparency is laid over white, as on paper;
2. colour becomes greyscale (Pillow's 'L', ITU-R 601 luma);
3. a light background (the mean of the border pixels above mid-grey) is
   inverted, so a dark digit on white paper becomes MNIST's light on black;
4. it is resized to fit 28x28, keeping its aspect ratio (stretching a tall 1
   would make it a blob), by averaging the pixels each output pixel covers
   (Pillow's BOX filter: no ringing, and a digit scaled up by a whole factor
   comes back exactly);
5. a non-square image is then padded with black to 28x28, centred.

Nothing is cropped or re-centred: frame the digit as MNIST does, about 20x20
pixels of 28x28 in the middle. This module does not import TensorFlow, so a
bad image is reported before TensorFlow loads.
"""

import numpy as np
from PIL import Image, ImageOps

from tf_mgpu.errors import UserError

SIZE = 28  # MNIST's images are SIZE x SIZE pixels


def read(path: str) -> np.ndarray:
    """The image file at `path` as MNIST pixels, (28, 28) uint8; UserError if it is not one."""
    try:
        with Image.open(path) as image:
            image.load()  # a truncated file fails here, not later
            return to_mnist(image)
    except FileNotFoundError:
        raise UserError(f"image {path} does not exist") from None
    except (OSError, SyntaxError, Image.DecompressionBombError) as e:
        reason = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise UserError(f"cannot read image {path} ({reason}); give PNG files") from None


def to_mnist(image: Image.Image) -> np.ndarray:
    """`image`, of any size, mode and colour, as MNIST pixels (see the module's docstring)."""
    grey = _greyscale(image)
    if light_background(np.asarray(grey)):
        grey = ImageOps.invert(grey)
    framed = ImageOps.pad(grey, (SIZE, SIZE), method=Image.Resampling.BOX, color=0)
    return np.asarray(framed, dtype=np.uint8)


def light_background(pixels: np.ndarray) -> bool:
    """Whether the border of greyscale `pixels` is lighter than mid-grey on average."""
    border = np.concatenate([pixels[0], pixels[-1], pixels[1:-1, 0], pixels[1:-1, -1]])
    return float(border.mean()) > 127.5


def _greyscale(image: Image.Image) -> Image.Image:
    if image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info:
        paper = Image.new("RGBA", image.size, "white")
        image = Image.alpha_composite(paper, image.convert("RGBA"))
    return image.convert("L")
