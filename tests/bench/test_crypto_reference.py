"""CPU checks of the crypto references (``hfuse.bench.reference.crypto``)."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

from hfuse.bench.reference import crypto as ref

# The Bitcoin genesis block header (80 bytes, as serialised) and its hash as displayed
# (byte-reversed double SHA-256): published facts.
GENESIS_HEADER = bytes.fromhex(
    "01000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "3ba3edfd7a7b12b27ac72c3e67768f617fc81bc3888a51323a9fb8aa4b1e5e4a"
    "29ab5f49" "ffff001d" "1dac2b7c"
)
GENESIS_NONCE = 2083236893
GENESIS_HASH_DISPLAYED = "000000000019d6689c085ae165831e934ff763ae46a2a6c172b3f1b60a8ce26f"


def _header(n_words: int, seed: int = 7) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 1 << 32, n_words, dtype=np.uint32)


# ----------------------------------------------------------------------------- BLAKE-256
@pytest.mark.parametrize(
    "message, digest",
    [
        (b"\x00", "0ce8d4ef4dd7cd8d62dfded9d4edb0a774ae6a41929a74da23109e8f11139c87"),
        (bytes(72), "d419bad32d504fb7d44d460c42c5593fe544fa4c135dec31e21bd9abdcc22d41"),
    ],
)
def test_blake256_published_vectors(message, digest):
    assert ref.blake256(message).hex() == digest


def test_blake256_lengths_and_padding_edges():
    # every length around the block and padding boundaries hashes, deterministically,
    # to distinct digests (55 bytes: the 0x81 padding byte; 64: a padding-only block)
    digests = {ref.blake256(bytes(n)) for n in (0, 1, 54, 55, 56, 63, 64, 65, 80, 119, 120, 128)}
    assert len(digests) == 12
    assert ref.blake256(bytes(55)) == ref.blake256(bytes(55))


def test_blake256_values_match_the_scalar_implementation():
    hdr = _header(20)
    start = (1 << 32) - 3  # crosses into the high 32 bits of the nonce
    values = ref.blake256_values(hdr, start, 7)
    for i, v in enumerate(values):
        msg = ref.blake256_header_bytes(hdr, start + i)
        assert int(v) == int.from_bytes(ref.blake256(msg)[:8], "big")


# ----------------------------------------------------------------------------- SHA256d
def test_sha256d_genesis_block():
    # header words as the kernel gets them; the nonce field is overwritten by the nonce
    words = np.frombuffer(GENESIS_HEADER[:76] + bytes(4), dtype="<u4").copy()
    assert ref.sha256_header_bytes(words, GENESIS_NONCE) == GENESIS_HEADER
    digest = bytes.fromhex(GENESIS_HASH_DISPLAYED)[::-1]
    assert hashlib.sha256(hashlib.sha256(GENESIS_HEADER).digest()).digest() == digest
    values = ref.sha256d_values(words, GENESIS_NONCE - 1, 3)
    assert int(values[1]) == int.from_bytes(digest[:8], "big") == 0x6FE28C0AB6F1B372
    assert values[0] != values[1] != values[2]


def test_sha256d_nonce_mapping_high_bits():
    hdr = _header(20)
    raw = ref.header_bytes(hdr, 80)
    nonce = 0x0123456789ABCDEF
    msg = ref.sha256_header_bytes(hdr, nonce)
    assert msg[:72] == raw[:72]
    assert msg[76:80] == (0x89ABCDEF).to_bytes(4, "little")
    assert bytes(a ^ b for a, b in zip(raw[72:76], (0x01234567).to_bytes(4, "little"))) == msg[72:76]
    v = ref.sha256d_values(hdr, nonce, 1)[0]
    assert int(v) == int.from_bytes(hashlib.sha256(hashlib.sha256(msg).digest()).digest()[:8], "big")


def test_header_as_bytes_or_words():
    hdr = _header(20)
    raw = ref.header_bytes(hdr, 80)
    assert np.array_equal(ref.sha256d_values(raw, 5, 4), ref.sha256d_values(hdr, 5, 4))
    with pytest.raises(ValueError):
        ref.header_bytes(raw[:79], 80)


# ----------------------------------------------------------------------------- BLAKE2b
def test_blake2b_wrapper_matches_hashlib():
    hdr = _header(20)
    raw = ref.header_bytes(hdr, 80)
    start = (1 << 64) - 2  # wraps
    values = ref.blake2b_values(hdr, start, 4)
    for i, v in enumerate(values):
        nonce = (start + i) & ref.MASK64
        msg = raw[:32] + nonce.to_bytes(8, "little") + raw[40:]
        assert int(v) == int.from_bytes(hashlib.blake2b(msg).digest()[:8], "big")


def test_blake2b_rfc7693_vector():
    assert hashlib.blake2b(b"abc").hexdigest().startswith("ba80a53f981c4d0d6a2797b69f12f6e9")


# ----------------------------------------------------------------------------- Keccak / Ethash
def test_keccak_original_padding():
    # published Keccak (not SHA-3) digests of the empty string
    assert ref.keccak256(b"").hex() == "c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"
    assert ref.keccak512(b"").hex().startswith("0eab42de4c3ceb9235fc91acffe746b29c29a8c3")
    assert ref.keccak256(b"") != hashlib.sha3_256(b"").digest()


def test_fnv():
    assert ref.fnv(0, 0) == 0
    assert ref.fnv(1, 0) == 0x01000193
    assert ref.fnv(0xFFFFFFFF, 0) == (0xFFFFFFFF * 0x01000193) & 0xFFFFFFFF
    assert ref.fnv(3, 5) == ((3 * 0x01000193) & 0xFFFFFFFF) ^ 5
    a = np.array([0, 1, 0xFFFFFFFF, 3], dtype=np.uint32)
    b = np.array([0, 0, 0, 5], dtype=np.uint32)
    assert [int(x) for x in ref.fnv(a, b)] == [ref.fnv(int(x), int(y)) for x, y in zip(a, b)]


def _scalar_hashimoto(header_hash: bytes, nonce: int, dag: np.ndarray) -> int:
    """Straight from the spec, one nonce, plain Python ints (independent of the vectorised one)."""
    words = [int(w) for w in np.frombuffer(dag.tobytes(), dtype="<u4")]
    num_pages = len(words) // 32
    seed = ref.keccak512(header_hash + nonce.to_bytes(8, "little"))
    s = [int.from_bytes(seed[4 * k: 4 * k + 4], "little") for k in range(16)]
    mix = s * 2
    for i in range(64):
        p = ref.fnv(i ^ s[0], mix[i % 32]) % num_pages
        mix = [ref.fnv(mix[j], words[32 * p + j]) for j in range(32)]
    cmix = [ref.fnv(ref.fnv(ref.fnv(mix[4 * k], mix[4 * k + 1]), mix[4 * k + 2]), mix[4 * k + 3])
            for k in range(8)]
    out = ref.keccak256(seed + b"".join(c.to_bytes(4, "little") for c in cmix))
    return int.from_bytes(out[:8], "big")


@pytest.fixture(scope="module")
def small_dag() -> np.ndarray:
    # a few MiB... here 1000 pages (128000 bytes, not a power of two) keeps the test fast
    return np.random.default_rng(3).integers(0, 1 << 32, 1000 * 32, dtype=np.uint32)


def test_ethash_matches_scalar_spec(small_dag):
    hh = _header(8)
    raw = ref.header_bytes(hh, 32)
    start = (1 << 32) - 2
    values = ref.ethash_values(hh, start, 4, small_dag)
    for i in range(4):
        assert int(values[i]) == _scalar_hashimoto(raw, start + i, small_dag)


def test_ethash_seed():
    hh = _header(8)
    assert ref.ethash_seed(hh, 0x1122334455667788) == ref.keccak512(
        ref.header_bytes(hh, 32) + bytes.fromhex("8877665544332211"))


def test_ethash_pages_in_range_and_deterministic(small_dag):
    hh = _header(8)
    v1, pages = ref.ethash_values(hh, 100, 200, small_dag, return_pages=True)
    v2 = ref.ethash_values(hh, 100, 200, small_dag)
    assert np.array_equal(v1, v2)
    assert pages.shape == (200, 64)
    assert pages.max() < 1000
    assert len(np.unique(pages)) > 900  # random pages spread over the DAG
    assert len(np.unique(v1)) == 200


def test_ethash_depends_on_the_pages_read(small_dag):
    hh = _header(8)
    v, pages = ref.ethash_values(hh, 42, 1, small_dag, return_pages=True)
    read = set(int(p) for p in pages[0])
    changed = small_dag.copy()
    p = int(pages[0, 17])
    changed[32 * p + 5] ^= 1
    assert ref.ethash_values(hh, 42, 1, changed)[0] != v[0]
    unread = next(q for q in range(1000) if q not in read)
    other = small_dag.copy()
    other[32 * unread: 32 * unread + 32] ^= 0xFFFFFFFF
    assert ref.ethash_values(hh, 42, 1, other)[0] == v[0]


def test_dag_pages_shapes(small_dag):
    assert ref.dag_pages(small_dag).shape == (1000, 32)
    assert ref.dag_pages(small_dag.tobytes()).shape == (1000, 32)
    with pytest.raises(ValueError):
        ref.dag_pages(small_dag[:31])


# ----------------------------------------------------------------------------- search
@pytest.mark.parametrize("name", ["sha256", "blake256", "blake2b", "ethash"])
def test_search_found_set(name, small_dag):
    hdr = _header(8 if name == "ethash" else 20)
    start, n, target = 1000, 300, (1 << 60) - 1
    values, found = ref.search(name, hdr, start, n, target, small_dag if name == "ethash" else None)
    assert values.dtype == np.uint64 and values.shape == (n,)
    expect = sorted(start + i for i in range(n) if int(values[i]) <= target)
    assert [int(x) for x in found] == expect
    assert 0 < len(found) < n  # about n/16 hits
