"""Kubernetes quantities (`100m`, `0.5`, `64Mi`, `1G`, `1e3`) read back as
the contract's base units, as the Rust adapter reads them
(adapter-kubernetes/src/quantity.rs)."""

from __future__ import annotations

import math
from typing import Optional

_FACTORS = {
    "": 1.0,
    "n": 1e-9,
    "u": 1e-6,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "P": 1e15,
    "E": 1e18,
    "Ki": 1024.0,
    "Mi": 1024.0**2,
    "Gi": 1024.0**3,
    "Ti": 1024.0**4,
    "Pi": 1024.0**5,
}


def parse(text: str, scale: int) -> Optional[int]:
    """A quantity scaled by `scale` (1000 for millicores, 1 for bytes),
    rounded up; None when it cannot be read."""
    text = text.strip()
    split = len(text)
    for i, c in enumerate(text):
        if not (c.isdigit() or c in ".+-"):
            split = i
            break
    number_text, suffix = text[:split], text[split:]
    try:
        number = float(number_text)
    except ValueError:
        return None
    if suffix in _FACTORS:
        factor = _FACTORS[suffix]
    elif suffix[:1] in ("e", "E"):
        try:
            factor = 10.0 ** int(suffix[1:])
        except (ValueError, OverflowError):
            return None
    else:
        return None
    value = math.ceil(number * factor * scale) if math.isfinite(number * factor * scale) else -1
    return value if value >= 0 else None
