"""Every widget class builds a small example of itself: ``X.example()``.

The JupyterLab test (``tests/browser/test_browser_jupyterlab.py``) shows one cell
``X.example()`` per class of ``course_utils.widgets.__all__`` in a gallery notebook and moves every
control, so a widget class without ``example()`` would go untested there. These tests fail first:
a widget class defined in the package but not exported, or without an ``example()`` of its own;
an example that is not an instance of its class, has no repr, has no control with two positions,
changes the caller's random state, or is slow.

(The file is ``test_widget_examples.py``, not ``test_widgets_examples.py``: ``test_package_layout``
keeps the name ``test_widgets_<module>.py`` for the tests of one widget module.)
"""

from __future__ import annotations

import importlib
import pkgutil
import time

import numpy as np
import pytest
import torch

import course_utils.widgets as widgets
from course_utils.widgets import CourseWidget

#: The classes the gallery shows: every export but the base.
EXPORTED = [getattr(widgets, name) for name in widgets.__all__ if name != "CourseWidget"]
#: Examples that run the shipped MiniLM model (the first one in a process also loads it).
LOADS_MINILM = {"HeadExplorer", "TopicWordFocus"}
#: Generous bounds (s) on one example() on a shared 2-core machine; typical times are ten times
#: smaller (MiniLM: a few seconds, the rest well under one).
SECONDS = 10.0
SECONDS_MINILM = 60.0


def _defined_widget_classes() -> set[type[CourseWidget]]:
    """Every CourseWidget subclass defined in a module of ``course_utils.widgets``."""
    found = set()
    for info in pkgutil.iter_modules(widgets.__path__):
        module = importlib.import_module(f"{widgets.__name__}.{info.name}")
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and issubclass(obj, CourseWidget)
                and obj is not CourseWidget
                and obj.__module__ == module.__name__
            ):
                found.add(obj)
    return found


def test_every_widget_class_is_exported() -> None:
    defined = {cls.__name__ for cls in _defined_widget_classes()}
    exported = {cls.__name__ for cls in EXPORTED}
    assert defined == exported, (
        f"defined but not in course_utils.widgets.__all__: {sorted(defined - exported)}; "
        f"exported but not a widget class: {sorted(exported - defined)}"
    )
    assert len(exported) >= 16


@pytest.mark.parametrize(
    "cls", sorted(_defined_widget_classes(), key=lambda c: c.__name__), ids=lambda c: c.__name__
)
def test_every_widget_class_has_its_own_example(cls: type[CourseWidget]) -> None:
    """A new widget class needs ``example()`` (not inherited): the JupyterLab test shows it."""
    assert "example" in vars(cls) and callable(cls.example), (
        f"{cls.__name__} has no example() of its own: add a classmethod `example(cls) -> Self` "
        "that builds a small instance (see CONTRIBUTING.md, 'Adding a widget')"
    )


def _index_traits(cls: type[CourseWidget]) -> list[str]:
    """The control positions (index traits) the class validates with ``_v_index``."""
    handler = getattr(cls, "_v_index", None)
    return list(getattr(handler, "trait_names", ()))


@pytest.mark.parametrize("cls", EXPORTED, ids=lambda c: c.__name__)
def test_example_is_a_quick_instance_with_a_control(cls: type[CourseWidget]) -> None:
    torch_state, numpy_state = torch.random.get_rng_state(), np.random.get_state()
    start = time.perf_counter()
    w = cls.example()
    seconds = time.perf_counter() - start
    print(f"{cls.__name__}.example(): {seconds:.2f} s")

    # anywidget adds the _esm/_css traits per instance, which gives it a subclass of its own
    assert isinstance(w, cls) and type(w).__name__ == cls.__name__, type(w)
    text = repr(w)
    assert text.startswith(f"{cls.__name__}(") and text.endswith(")"), text
    assert " at 0x" not in text, text  # deterministic, as nbval needs
    # At least one control with two positions or more, so that the JupyterLab test can move it.
    sizes = {name: w._index_size(name) for name in _index_traits(cls)}
    assert any(n >= 2 for n in sizes.values()), f"no control to move: {sizes}"
    # The example seeds its own generators: the caller's random state is untouched.
    assert torch.equal(torch.random.get_rng_state(), torch_state), "example() moved torch's RNG"
    assert np.array_equal(np.random.get_state()[1], numpy_state[1]), "example() moved numpy's RNG"

    bound = SECONDS_MINILM if cls.__name__ in LOADS_MINILM else SECONDS
    assert seconds < bound, f"{cls.__name__}.example() took {seconds:.1f} s (bound {bound} s)"
