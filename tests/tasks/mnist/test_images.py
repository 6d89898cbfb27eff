"""Image files to MNIST pixels: MNIST's own exactly, any other size and colour converted."""

import numpy as np
import pytest
from PIL import Image

from tests.support import on_paper
from tf_mgpu.errors import UserError
from tf_mgpu.tasks.mnist import images


def test_a_28x28_greyscale_png_as_mnist_draws_it_reads_back_pixel_for_pixel(mnist, tmp_path):
    pixels = mnist.test.x[0]
    Image.fromarray(pixels, "L").save(tmp_path / "digit.png")
    np.testing.assert_array_equal(images.read(str(tmp_path / "digit.png")), pixels)


def test_black_on_white_rgb_at_twice_the_size_comes_back_as_the_mnist_digit(mnist, tmp_path):
    pixels = mnist.test.x[1]
    on_paper(pixels, scale=2).save(tmp_path / "paper.png")
    np.testing.assert_array_equal(images.read(str(tmp_path / "paper.png")), pixels)


def test_a_dark_digit_on_transparent_background_is_laid_on_white_and_inverted(mnist):
    pixels = mnist.test.x[2]
    rgba = np.zeros((28, 28, 4), np.uint8)
    rgba[..., 3] = pixels  # black ink, as opaque as MNIST's stroke is bright
    converted = images.to_mnist(Image.fromarray(rgba, "RGBA")).astype(int)
    assert np.abs(converted - pixels).max() <= 1, np.abs(converted - pixels).max()


def test_a_tall_image_keeps_its_aspect_and_is_padded_with_black(mnist):
    pixels = mnist.test.x[3]
    tall = np.zeros((56, 28), np.uint8)
    tall[:28] = pixels  # twice as tall as wide: fits as 14 x 28, centred
    converted = images.to_mnist(Image.fromarray(tall, "L"))
    assert converted.shape == (28, 28)
    assert not converted[:, :7].any(), "left padding is not black"
    assert not converted[:, 21:].any(), "right padding is not black"
    shrunk = Image.fromarray(tall, "L").resize((14, 28), Image.Resampling.BOX)
    np.testing.assert_array_equal(converted[:, 7:21], np.asarray(shrunk))


def test_only_a_light_border_means_a_light_background():
    dark = np.zeros((28, 28), np.uint8)
    dark[10:18, 10:18] = 255  # a bright digit in the middle does not count
    assert not images.light_background(dark)
    assert images.light_background(255 - dark)


@pytest.mark.parametrize(
    ("name", "named"),
    [
        ("missing.png", "does not exist"),
        ("notes.png", "cannot read image"),
        ("truncated.png", "cannot read image"),
        ("folder.png", "cannot read image"),
    ],
)
def test_what_is_not_an_image_is_a_one_line_user_error(mnist, tmp_path, name, named):
    path = tmp_path / name
    if name == "notes.png":
        path.write_text("a text file named like an image")
    elif name == "truncated.png":
        Image.fromarray(mnist.test.x[0], "L").save(path)
        path.write_bytes(path.read_bytes()[:60])
    elif name == "folder.png":
        path.mkdir()
    with pytest.raises(UserError) as error:
        images.read(str(path))
    message = str(error.value)
    assert named in message, message
    assert str(path) in message, message
    assert "\n" not in message, message
