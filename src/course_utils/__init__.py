"""course_utils: the maths, plots, exercises and widgets of the course "Attention, step by step".

One implementation per concept; the notebooks import from here and never paste package code.
Heavy dependencies (torch, the pretrained model) are imported only by the modules that need them.
Importing the package changes nothing outside it: IPython's formatters and matplotlib stay as they
are (the book's execute script records figure text sizes; ``set_language("zh")`` draws figure text
in Chinese).
"""

from . import i18n  # course_utils.i18n.set_language("zh"): the language of figures and feedback
from .attention import attention_scores, scaled_dot_product_attention
from .masks import causal_mask
from .softmax import softmax

__all__ = [
    "attention_scores",
    "causal_mask",
    "i18n",
    "scaled_dot_product_attention",
    "softmax",
]
__version__ = "0.1.0"
