"""course_utils.pretrained.web_export and course_utils._file_lock: what the browser exports share.

* Byte planes: the worked example, a round trip for every dtype the exports use (and any byte
  order given), and a clear error for bytes that are not whole numbers.
* Deflate (``pack``/``unpack``) is ``zlib``'s, so the browser's ``DecompressionStream("deflate")``
  reads it: an independent decoder (``zlib.decompressobj``) reads what ``pack`` wrote.
* ``kept_export``: made once, kept; a half-written folder is never returned; four processes
  asking at once export once.
* ``exclusive_lock`` on Windows (``msvcrt``), imitated: lock, then unlock, of the same byte.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from course_utils import _file_lock
from course_utils._file_lock import exclusive_lock
from course_utils.pretrained.web_export import (
    cache_folder,
    join_planes,
    kept_export,
    pack,
    split_planes,
    unpack,
)


@pytest.mark.parametrize(
    ("values", "dtype", "planes"),
    [
        ([1.0, -2.5, 65504.0], "<f2", "00 00 ff 3c c1 7b"),
        ([1.0, -2.5, 65504.0], ">f2", "00 00 ff 3c c1 7b"),  # read as little-endian all the same
        ([1.0], "<f4", "00 00 80 3f"),
        ([1, 258], "<u2", "01 02 00 01"),
        ([7, 8, 9], "u1", "07 08 09"),
        ([], "<f2", ""),
    ],
)
def test_split_planes_table(values: list[float], dtype: str, planes: str) -> None:
    assert split_planes(np.array(values, dtype=dtype)).hex(" ") == planes


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(
        dtype=st.sampled_from(["<f2", ">f2", "<f4", ">f4", "<u2", "<i4"]).map(np.dtype),
        shape=hnp.array_shapes(min_dims=1, max_dims=3, max_side=9),
        elements={"allow_nan": False},
    )
)
def test_planes_and_packing_round_trip(a: np.ndarray) -> None:
    back = join_planes(split_planes(a), a.dtype)
    np.testing.assert_array_equal(back, a.ravel())
    assert back.dtype == a.dtype.newbyteorder("<")
    np.testing.assert_array_equal(unpack(pack(a), a.dtype), a.ravel())
    # what a browser reads: a plain RFC 1950 stream, whole after one pass
    reader = zlib.decompressobj(wbits=15)
    assert reader.decompress(pack(a)) == split_planes(a) and reader.eof


def test_packing_shrinks_float16_weights_by_their_high_bytes() -> None:
    """Trained float16 weights: the high bytes (sign, exponent) repeat, the low ones do not.
    Byte planes let deflate find that; the same numbers deflated as they stand save little."""
    w = np.random.default_rng(0).normal(0.0, 0.05, 200_000).astype("<f2")  # weight-like
    planes, plain = len(pack(w)), len(zlib.compress(w.tobytes(), 9))
    assert planes < 0.9 * w.nbytes and planes < plain


def test_packing_writes_the_same_bytes_on_every_machine() -> None:
    """The sizes the chapters state are those of files the site's build writes, so the packed
    bytes must not depend on the machine. Recorded with libdeflate (``deflate==0.9.0``, level
    12) on x86-64; Python's own zlib at level 9 writes 86,018 bytes here, zlib-ng other ones."""
    w = np.random.default_rng(0).normal(0.0, 0.05, 50_000).astype("<f2")  # weight-like
    packed = pack(w)
    assert (len(packed), hashlib.sha256(packed).hexdigest()[:16]) == (84_393, "8d3515b8e1d73ffc")


def test_join_planes_refuses_bytes_that_are_not_whole_numbers() -> None:
    with pytest.raises(
        ValueError, match=r"raw holds 5 bytes, not a whole number of 2-byte float16"
    ):
        join_planes(b"\x00" * 5, "<f2")


def _write_slowly(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "data.bin").write_bytes(b"x" * 1000)
    with open(folder.parent / "exports.log", "a") as log:  # one line per export actually run
        log.write(f"{os.getpid()}\n")
    (folder / "manifest.json").write_text("{}")


def _ask(folder: str) -> str:
    return str(kept_export(Path(folder), _write_slowly))


def test_kept_export_is_made_once_and_kept(tmp_path: Path) -> None:
    folder = tmp_path / "export.v1"
    calls: list[Path] = []

    def export(d: Path) -> None:
        calls.append(d)
        _write_slowly(d)

    assert kept_export(folder, export) == folder
    assert kept_export(folder, export) == folder
    assert len(calls) == 1 and calls[0] != folder  # written elsewhere, then renamed
    assert (folder / "data.bin").read_bytes() == b"x" * 1000
    assert not list(tmp_path.glob("*.partial"))


def test_a_half_written_export_is_made_again(tmp_path: Path) -> None:
    folder = tmp_path / "export.v1"
    folder.mkdir()
    (folder / "data.bin").write_bytes(b"cut")  # no manifest: an export that died half-way
    kept_export(folder, _write_slowly)
    assert (folder / "data.bin").read_bytes() == b"x" * 1000


def test_an_export_that_fails_leaves_nothing_that_looks_made(tmp_path: Path) -> None:
    folder = tmp_path / "export.v1"

    def broken(d: Path) -> None:
        d.mkdir()
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        kept_export(folder, broken)
    assert not folder.exists() and not list(tmp_path.glob("*.partial"))


def test_four_processes_asking_at_once_export_once(tmp_path: Path) -> None:
    folder = tmp_path / "export.v1"
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        got = pool.map(_ask, [str(folder)] * 4)
    assert got == [str(folder)] * 4
    assert len((tmp_path / "exports.log").read_text().split()) == 1


def test_cache_folder_falls_back_to_the_users_cache(tmp_path: Path, monkeypatch) -> None:
    writable = tmp_path / "pkg"
    writable.mkdir()
    assert cache_folder(writable) == writable
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(os, "access", lambda path, mode: False)  # a read-only system install
    assert cache_folder(writable) == tmp_path / "cache" / "attention-course"


class _FakeMsvcrt:
    """What exclusive_lock asks of Windows' msvcrt: LK_LOCK gives up (OSError) after 10 s."""

    LK_LOCK, LK_UNLCK = 1, 0

    def __init__(self, refusals: int) -> None:
        self.refusals = refusals
        self.calls: list[tuple[int, int, int]] = []

    def locking(self, fd: int, mode: int, nbytes: int) -> None:
        self.calls.append((os.lseek(fd, 0, os.SEEK_CUR), mode, nbytes))
        if mode == self.LK_LOCK and self.refusals:
            self.refusals -= 1
            raise OSError("Resource deadlock avoided")


def test_the_lock_on_windows_waits_then_locks_and_unlocks_the_first_byte(
    tmp_path: Path, monkeypatch
) -> None:
    fake = _FakeMsvcrt(refusals=2)  # another process held it for 20 s
    monkeypatch.setattr(_file_lock, "_fcntl", None)
    monkeypatch.setattr(_file_lock, "_msvcrt", fake)
    with exclusive_lock(tmp_path / "sub" / "x.lock"):
        assert fake.calls == [(0, 1, 1)] * 3
    assert fake.calls[-1] == (0, 0, 1)
    assert (tmp_path / "sub" / "x.lock").is_file()


def test_the_lock_keeps_a_second_process_waiting(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    ctx = multiprocessing.get_context("spawn")
    with exclusive_lock(lock):
        child = ctx.Process(target=_take_lock_and_note, args=(str(lock), str(tmp_path / "got")))
        child.start()
        child.join(1.0)
        assert child.is_alive() and not (tmp_path / "got").exists()  # waiting for us
    child.join(30)
    assert child.exitcode == 0 and (tmp_path / "got").exists()


def _take_lock_and_note(lock: str, note: str) -> None:
    with exclusive_lock(lock):
        Path(note).write_text("got it")
