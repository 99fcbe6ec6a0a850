"""course_utils: the maths, plots, exercises and widgets of the course "Attention, step by step".

One implementation per concept; the notebooks import from here and never paste package code.
Heavy dependencies (torch, the pretrained model) are imported only by the modules that need them.
"""

from . import i18n
from .attention import attention_scores, scaled_dot_product_attention
from .masks import causal_mask
from .plotting import install_figure_format
from .softmax import softmax

# In a notebook, figures are shown with their smallest text recorded in the PNG (the book's browser
# test checks it is >= 11 px as shown); outside IPython this does nothing.
install_figure_format()

__all__ = ["attention_scores", "causal_mask", "scaled_dot_product_attention", "softmax"]
__version__ = "0.1.0"

if i18n.get_language() == "zh":  # COURSE_LANG=zh: figures drawn in Chinese (course_utils.i18n)
    i18n.install_matplotlib_hook()
