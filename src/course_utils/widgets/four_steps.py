"""Chapter 3's step-through: the seed's four steps (计算流程) on one example, one step at a time.

Step 1 ``Score = Q Kᵀ``, step 2 ``Scaled = Score / √d_k`` (缩放), step 3
``Weights = softmax(Scaled)`` (归一化), step 4 ``Output = Weights V`` (加权求和). Python computes
every step with :mod:`course_utils` (``attention_scores``, ``softmax``,
``scaled_dot_product_attention``); the JavaScript only shows the matrix of the selected step as a
labelled heatmap with its numbers.

>>> q, k = [[1.0, 0.0], [0.0, 1.0]], [[2.0, 0.0], [0.0, 2.0]]
>>> w = FourSteps(q, k, [[1.0], [3.0]], tokens=["a", "b"])
>>> w.step_names[w.step_index]
'Score = Q Kᵀ'
>>> w.step_index = 3
>>> w.current.round(3)  # the output, (T_q, d_v)
array([[1.391],
       [2.609]])
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import traitlets
from numpy.typing import NDArray

from .._validation import as_bool_array, shape_str
from ..attention import attention_scores, scaled_dot_product_attention
from ..softmax import softmax
from ._base import DECIMALS, CourseWidget, check_drawable, check_qkv, check_tokens, pack_array
from ._text import Text

__all__ = ["STEP_NAMES", "FourSteps"]

STEP_NAMES = (
    "Score = Q Kᵀ",
    "Scaled = Score / √d_k",
    "Weights = softmax(Scaled)",
    "Output = Weights V",
)


class FourSteps(CourseWidget):
    """Step through Score → Scaled → Weights → Output for one set of queries, keys and values.

    Parameters
    ----------
    q : array_like, shape ``(T_q, d_k)``
    k : array_like, shape ``(T_k, d_k)``
    v : array_like, shape ``(T_k, d_v)``
    tokens : list of str
        Labels of the keys (and of the queries when ``query_tokens`` is not given).
    query_tokens : list of str, optional
        Labels of the queries (default: ``tokens``, i.e. self-attention, ``T_q = T_k``).
    value_labels : list of str, optional
        Column labels of the output (default ``["v1", ...]``, one per value dimension).
    mask : array_like of bool, shape ``(T_q, T_k)``, optional
        ``True`` = may attend; masked scores are shown as "−∞" from step 2 on and get weight 0.
    step_index : int
        Initial step, 0..3.
    """

    _widget_file = "four_steps"

    query_tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)
    key_tokens = traitlets.List(traitlets.Unicode()).tag(sync=True)
    value_labels = traitlets.List(traitlets.Unicode()).tag(sync=True)
    step_names = traitlets.List(Text(), list(STEP_NAMES)).tag(sync=True)
    # Packed: scores, scaled, weights (T_q, T_k); output (T_q, d_v); mask (T_q, T_k) as 0/1.
    frames = traitlets.Dict().tag(sync=True)
    step_index = traitlets.Int(0).tag(sync=True)

    def __init__(
        self,
        q: Any,
        k: Any,
        v: Any,
        *,
        tokens: Sequence[str],
        query_tokens: Sequence[str] | None = None,
        value_labels: Sequence[str] | None = None,
        mask: Any = None,
        step_index: int = 0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        q_arr, k_arr, v_arr = check_qkv(q, k, v)  # (T_q, d_k), (T_k, d_k), (T_k, d_v)
        check_drawable("FourSteps", q_arr, k_arr, v_arr)
        t_q, t_k, d_v = q_arr.shape[0], k_arr.shape[0], v_arr.shape[1]
        keys = check_tokens(tokens, "tokens", count=t_k)
        if query_tokens is not None:
            queries = check_tokens(query_tokens, "query_tokens", count=t_q, per="one per row of q")
        elif t_q == t_k:  # self-attention: the tokens label the queries too
            queries = keys
        else:
            raise ValueError(
                f"q has {t_q} rows and k {t_k}: pass query_tokens (one label per row of q); "
                "tokens label the rows of k"
            )
        cols = (
            [f"v{j + 1}" for j in range(d_v)]
            if value_labels is None
            else check_tokens(value_labels, "value_labels", count=d_v, per="one per column of v")
        )
        expected = (q_arr.shape[0], k_arr.shape[0])
        if mask is None:
            mask_arr = np.ones(expected, dtype=bool)
        else:
            mask_arr = as_bool_array(mask, "mask")
            if mask_arr.shape != expected:
                raise ValueError(
                    f"mask has shape {shape_str(mask_arr.shape)}, "
                    f"expected {shape_str(expected)} (T_q, T_k)"
                )
        self._q, self._k, self._v, self._mask = q_arr, k_arr, v_arr, mask_arr
        with self.hold_trait_notifications():
            self.query_tokens = list(queries)
            self.key_tokens = list(keys)
            self.value_labels = cols
        self._recompute()
        self.step_index = step_index

    @classmethod
    def example(cls) -> Self:
        """Chapter 3's four steps on 小明在银行边的长椅上看书
        (:func:`course_utils.data.bank_example`): eight words as queries and keys, the six
        features as value columns.

        >>> w = FourSteps.example()
        >>> w.key_tokens[5], w.value_labels[:2]
        ('长椅', ['person', 'action'])
        >>> w.step_index = 2                  # the softmax weights
        >>> w.current[5].round(2)             # 长椅 (bench) looks at 银行 (bank) and 边 (side)
        array([0.04, 0.11, 0.31, 0.31, 0.04, 0.04, 0.11, 0.04])
        """
        from ..data import FEATURES, bank_example

        bank = bank_example()
        return cls(
            bank.Q,
            bank.K,
            bank.V,
            tokens=list(bank.tokens),
            value_labels=list(FEATURES),
            title="The four steps on 小明在银行边的长椅上看书",
        )

    _v_index = traitlets.validate("step_index")(CourseWidget._valid_index)

    def _index_size(self, name: str) -> int:
        return 4  # the four steps: scores, scaled, softmax, weighted sum

    def steps(self) -> tuple[NDArray, NDArray, NDArray, NDArray]:
        """``(scores, scaled, weights, output)``; masked entries of ``scaled`` are ``-inf``."""
        scores = attention_scores(self._q, self._k, scale=1.0)  # (T_q, T_k)
        scaled = attention_scores(self._q, self._k)  # (T_q, T_k), default 1/sqrt(d_k)
        scaled = np.where(self._mask, scaled, -np.inf)  # (T_q, T_k)
        weights = softmax(scaled, axis=-1)  # (T_q, T_k)
        output, _ = scaled_dot_product_attention(
            self._q, self._k, self._v, self._mask
        )  # (T_q, d_v)
        return scores, scaled, weights, output

    def _recompute(self) -> None:
        scores, scaled, weights, output = self.steps()
        self.frames = {
            "scores": pack_array(scores),
            "scaled": pack_array(np.where(self._mask, scaled, 0.0)),
            "weights": pack_array(weights),
            "output": pack_array(output),
            "mask": pack_array(self._mask.astype(float), 0),
            "d_k": int(self._q.shape[1]),
            "sqrt_d_k": round(math.sqrt(self._q.shape[1]), DECIMALS),
        }
        self._check_budget()

    _repr_format = "T_q={T_q}, T_k={T_k}, step={step}"

    def _repr_values(self) -> dict[str, Any]:
        return {
            "T_q": len(self.query_tokens),
            "T_k": len(self.key_tokens),
            "step": self.step_index + 1,
        }

    @property
    def current(self) -> NDArray:
        """The matrix of the current step (exact)."""
        return self.steps()[self.step_index]
