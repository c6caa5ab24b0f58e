"""Exports scikit-learn's handwritten digits (1797 images of 8x8 pixels, values 0..16) into
`digits.safetensors` next to this script: `images` u8 [1797, 64] and `labels` i64 [1797].

Run once (the output is committed):  python3 examples/data/make_digits.py
Needs: pip install scikit-learn numpy safetensors
"""
import os

import numpy as np
from safetensors.numpy import save_file
from sklearn.datasets import load_digits

digits = load_digits()
images = digits.data.astype(np.uint8)  # the values are the integers 0..16
assert images.shape == (1797, 64) and images.max() == 16
labels = digits.target.astype(np.int64)
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "digits.safetensors")
save_file({"images": images, "labels": labels}, out,
          metadata={"source": "scikit-learn load_digits (UCI Optical Recognition of Handwritten Digits)",
                    "license": "CC BY 4.0"})
print(out, images.shape, labels.shape)
