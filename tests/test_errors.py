"""The one error type: where, what, a hint, and the notes that may say why."""
from __future__ import annotations

import pickle

import pytest

from hfuse.errors import HFuseError, Location, noted


def test_a_refusal_carries_the_notes_made_before_it_each_once():
    note = "note: Clang could not instantiate the kernel templates of k.cu as asked (no member named 'Max')"
    with pytest.raises(HFuseError) as error:
        with noted([note]):
            with noted([note, "note: another"]):
                raise HFuseError("cannot prove the fused kernel correct", Location("k.cu", 3, "k"), hint="give it")
    text = str(error.value)
    assert text.startswith("k.cu:3, kernel 'k': cannot prove the fused kernel correct\n  hint: give it\n")
    assert text.count(note) == 1 and text.endswith("  note: another")


def test_notes_travel_with_the_error_between_processes():
    error = HFuseError("refused", Location("k.cu", 1, "k"))
    error.notes = ("note: why",)
    assert str(pickle.loads(pickle.dumps(error))) == str(error)


def test_other_exceptions_pass_through_untouched():
    with pytest.raises(KeyError):
        with noted(["note: unused"]):
            raise KeyError("k")
