"""digits_data.py — the training images of the trained "digits" family: the ten
digit glyphs rendered from the fonts of Debian's fonts-dejavu-core (the fonts CI
installs; scikit-learn and its handwritten digits are not packaged here), with a
seeded random affine jitter, anti-aliased down to 16x16 grey levels.

Shared by the training script (tests/reference/train/train_digits.py) and the acceptance test
(tests/reference/test_digits_samples.py), which fits its classifier on this data.
Deterministic: a given (n_per_class, seed) gives the same images wherever PIL
renders the same glyph outlines (FreeType versions may differ in the last grey
level of an edge pixel; nothing downstream depends on those bits).

API:
    FONTS                      the font files (fonts-dejavu-core), in a fixed order
    WORDS                      digit -> English word ("zero" .. "nine")
    prompt(k)                  the text prompt of digit k ("a printed seven")
    available()                None if the fonts and PIL are there, else why not
    render(n_per_class, seed)  -> (images (N, 16, 16) float32 in [0, 1], white on
                                  black; labels (N,) int64), classes interleaved
"""
import os

import numpy as np

FONT_DIR = "/usr/share/fonts/truetype/dejavu"
FONTS = ["DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DejaVuSansMono.ttf", "DejaVuSansMono-Bold.ttf",
         "DejaVuSerif.ttf", "DejaVuSerif-Bold.ttf"]
WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
SIZE = 16       # output side, pixels
CANVAS = 64     # rendering side: glyphs are drawn 4x larger, then box-filtered down


def prompt(k):
    return "a printed " + WORDS[k]


def available():
    try:
        import PIL  # noqa: F401
    except ImportError:
        return "python3-pil is not installed"
    for f in FONTS:
        if not os.path.exists(os.path.join(FONT_DIR, f)):
            return "font %s missing (fonts-dejavu-core)" % os.path.join(FONT_DIR, f)
    return None


def _glyph(font, ch, rng):
    """One jittered glyph: (SIZE, SIZE) float32 in [0, 1]."""
    from PIL import Image, ImageDraw
    img = Image.new("L", (CANVAS, CANVAS), 0)
    d = ImageDraw.Draw(img)
    x0, y0, x1, y1 = d.textbbox((0, 0), ch, font=font)
    d.text(((CANVAS - (x1 - x0)) / 2 - x0, (CANVAS - (y1 - y0)) / 2 - y0), ch, fill=255, font=font)
    # affine jitter about the centre: rotation +-12 deg, scale 0.8..1.05, shear +-0.2, shift +-3 px
    a = np.deg2rad(rng.uniform(-12, 12))
    s = rng.uniform(0.8, 1.05)
    sh = rng.uniform(-0.2, 0.2)
    tx, ty = rng.uniform(-3, 3, size=2)
    m = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]]) @ np.array([[1, sh], [0, 1]]) * s
    inv = np.linalg.inv(m)  # PIL maps output -> input coordinates
    c = CANVAS / 2
    off = np.array([c, c]) - inv @ np.array([c + tx, c + ty])
    img = img.transform((CANVAS, CANVAS), Image.AFFINE, (inv[0, 0], inv[0, 1], off[0], inv[1, 0], inv[1, 1], off[1]),
                        resample=Image.BILINEAR)
    a = np.asarray(img, dtype=np.float32) / 255.0
    f = CANVAS // SIZE
    return a.reshape(SIZE, f, SIZE, f).mean(axis=(1, 3))


def render(n_per_class, seed):
    from PIL import ImageFont
    rng = np.random.RandomState(seed)
    fonts = {}
    imgs, labels = [], []
    for i in range(n_per_class):
        for k in range(10):
            fi = rng.randint(len(FONTS))
            px = int(rng.randint(40, 52))  # glyph size on the 64-px canvas
            key = (fi, px)
            if key not in fonts:
                fonts[key] = ImageFont.truetype(os.path.join(FONT_DIR, FONTS[fi]), px)
            imgs.append(_glyph(fonts[key], str(k), rng))
            labels.append(k)
    return np.stack(imgs).astype(np.float32), np.array(labels, dtype=np.int64)
