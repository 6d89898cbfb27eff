"""TFDS split strings of the common forms, read without TFDS or TensorFlow."""

import re

_SIMPLE = re.compile(r"^(train|test)(?:\[(-?\d+%?)?:(-?\d+%?)?\])?$")


def simple_slice(spec: str, sizes: dict[str, int]) -> tuple[str, slice] | None:
    """(split name, slice) for the common forms 'train', 'test[:1000]', 'train[10%:-5]',
    with TFDS's meaning (a percentage rounds to the closest example); None for any other
    form, or a bound past the split's end, which `select` leaves to TFDS."""
    match = _SIMPLE.match(spec.replace(" ", ""))
    if not match:
        return None
    name, start, stop = match.groups()
    size = sizes[name]

    def bound(text: str | None) -> int | None:
        if text is None:
            return None
        return round(int(text[:-1]) * size / 100) if text.endswith("%") else int(text)

    bounds = (bound(start), bound(stop))
    if any(b is not None and abs(b) > size for b in bounds):
        return None
    return name, slice(*bounds)
