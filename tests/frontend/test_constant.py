"""frontend/constant.py: integer constant expressions of attributes."""
from hfuse.frontend.constant import evaluate


def test_arithmetic_as_cpp_evaluates_it():
    assert evaluate("(BM * BN) / (TM * TN)", {"BM": 64, "BN": 64, "TM": 4, "TN": 4}) == 256
    assert evaluate("256u") == 256 and evaluate("0x100") == 256 and evaluate("1 << 8") == 256
    assert evaluate("-7 / 2") == -3 and evaluate("-7 % 2") == -1  # truncation toward zero, as in C++


def test_what_cannot_be_known_is_none():
    assert evaluate("NUM_THREADS") is None
    assert evaluate("sizeof(float) * 64") is None
    assert evaluate("BLOCK / 0", {"BLOCK": 4}) is None
    assert evaluate("f(3)") is None
