"""CPU references of the four crypto benchmark kernels (``bench/kernels/*.cu``).

Each ``*_values`` function computes, for the nonces ``start_nonce .. start_nonce +
num_nonces - 1`` (wrapping modulo 2**64), exactly the 64-bit value the kernel writes to
``hashes[i]``: the first 8 bytes of the digest read as a big-endian integer.
``search`` returns those values and the nonces a kernel appends to ``found_nonces``
(value <= target).

How the header and the nonce form the hashed message (the same in the kernels):

- ``sha256`` (double SHA-256) and ``blake256`` (BLAKE-256, 14 rounds): the 80-byte
  header; bytes 76..79 = low 32 bits of the nonce (little-endian), bytes 72..75 XOR=
  high 32 bits of the nonce (little-endian).
- ``blake2b`` (BLAKE2b-512, unkeyed): the 80-byte header with bytes 32..39 = the nonce
  (little-endian uint64).
- ``ethash``: seed = Keccak-512(32-byte header hash || nonce as 8 little-endian bytes),
  then the hashimoto loop over a DAG of 128-byte pages, then Keccak-256 (original Keccak
  padding, as Ethereum uses). See ``ethash_values``.

Headers are given as the kernels receive them (``numpy.uint32`` words, the raw bytes
read little-endian) or as ``bytes``.

SHA-256 and BLAKE2b come from ``hashlib``, Keccak from ``Crypto.Hash.keccak``
(pycryptodome); BLAKE-256 is implemented here from its specification (vectorised over
nonces with NumPy) and checked against the published test vectors.
"""
from __future__ import annotations

import hashlib
from typing import Callable

import numpy as np

MASK64 = (1 << 64) - 1
FNV_PRIME = 0x01000193
PAGE_BYTES = 128
PAGE_WORDS = PAGE_BYTES // 4
ETHASH_ROUNDS = 64

__all__ = [
    "blake256",
    "blake256_values",
    "blake2b_header_bytes",
    "blake2b_values",
    "ethash_seed",
    "ethash_values",
    "fnv",
    "header_bytes",
    "keccak256",
    "keccak512",
    "search",
    "sha256_header_bytes",
    "sha256d_values",
    "VALUE_FUNCTIONS",
]


# ----------------------------------------------------------------------------- helpers
def header_bytes(header, length: int) -> bytes:
    """The raw bytes of a header given as bytes or as little-endian uint32 words."""
    if isinstance(header, (bytes, bytearray, memoryview)):
        data = bytes(header)
    else:
        data = np.ascontiguousarray(np.asarray(header, dtype=np.uint32)).astype("<u4").tobytes()
    if len(data) != length:
        raise ValueError(f"header must be {length} bytes, got {len(data)}")
    return data


def _nonces(start_nonce: int, num_nonces: int) -> list[int]:
    start = int(start_nonce) & MASK64
    return [(start + i) & MASK64 for i in range(int(num_nonces))]


def _first8(digest: bytes) -> int:
    return int.from_bytes(digest[:8], "big")


def sha256_header_bytes(header, nonce: int) -> bytes:
    """The 80 bytes SHA256d and BLAKE-256 hash for ``nonce`` (see the module doc)."""
    data = bytearray(header_bytes(header, 80))
    nonce = int(nonce) & MASK64
    hi = (nonce >> 32).to_bytes(4, "little")
    for k in range(4):
        data[72 + k] ^= hi[k]
    data[76:80] = (nonce & 0xFFFFFFFF).to_bytes(4, "little")
    return bytes(data)


blake256_header_bytes = sha256_header_bytes


def blake2b_header_bytes(header, nonce: int) -> bytes:
    """The 80 bytes BLAKE2b hashes for ``nonce``: bytes 32..39 = nonce (little-endian)."""
    data = bytearray(header_bytes(header, 80))
    data[32:40] = (int(nonce) & MASK64).to_bytes(8, "little")
    return bytes(data)


# ----------------------------------------------------------------------------- SHA256d
def sha256d_values(header, start_nonce: int, num_nonces: int) -> np.ndarray:
    base = header_bytes(header, 80)
    out = np.empty(int(num_nonces), dtype=np.uint64)
    for i, nonce in enumerate(_nonces(start_nonce, num_nonces)):
        msg = sha256_header_bytes(base, nonce)
        out[i] = _first8(hashlib.sha256(hashlib.sha256(msg).digest()).digest())
    return out


# ----------------------------------------------------------------------------- BLAKE2b
def blake2b_values(header, start_nonce: int, num_nonces: int) -> np.ndarray:
    base = header_bytes(header, 80)
    out = np.empty(int(num_nonces), dtype=np.uint64)
    for i, nonce in enumerate(_nonces(start_nonce, num_nonces)):
        out[i] = _first8(hashlib.blake2b(blake2b_header_bytes(base, nonce), digest_size=64).digest())
    return out


# ----------------------------------------------------------------------------- BLAKE-256
# Written from the BLAKE specification (final round-3 version, 14 rounds for BLAKE-256).
_B256_IV = np.array(
    [0x6A09E667, 0xBB67AE85, 0x3C6EF372, 0xA54FF53A, 0x510E527F, 0x9B05688C, 0x1F83D9AB, 0x5BE0CD19],
    dtype=np.uint32,
)
_B256_C = [
    0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344, 0xA4093822, 0x299F31D0, 0x082EFA98, 0xEC4E6C89,
    0x452821E6, 0x38D01377, 0xBE5466CF, 0x34E90C6C, 0xC0AC29B7, 0xC97C50DD, 0x3F84D5B5, 0xB5470917,
]
SIGMA = (
    (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
    (14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3),
    (11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4),
    (7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8),
    (9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13),
    (2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9),
    (12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11),
    (13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10),
    (6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5),
    (10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0),
)
_G_INDEX = ((0, 4, 8, 12), (1, 5, 9, 13), (2, 6, 10, 14), (3, 7, 11, 15),
            (0, 5, 10, 15), (1, 6, 11, 12), (2, 7, 8, 13), (3, 4, 9, 14))


def _rotr32(x: np.ndarray, n: int) -> np.ndarray:
    return (x >> np.uint32(n)) | (x << np.uint32(32 - n))


def _blake256_compress(h: list[np.ndarray], m: list[np.ndarray], t0: int, t1: int) -> list[np.ndarray]:
    """One BLAKE-256 compression; h: 8 chain words, m: 16 message words (uint32 arrays
    of one shape, big-endian words of the block), t0/t1: the bit counter. Salt zero."""
    shape = np.broadcast(*h, *m).shape
    c = [np.full(shape, k, dtype=np.uint32) for k in _B256_C]
    v = [np.broadcast_to(x, shape).astype(np.uint32) for x in h]
    v += [c[0].copy(), c[1].copy(), c[2].copy(), c[3].copy(),
          c[4] ^ np.uint32(t0), c[5] ^ np.uint32(t0), c[6] ^ np.uint32(t1), c[7] ^ np.uint32(t1)]
    m = [np.broadcast_to(x, shape).astype(np.uint32) for x in m]
    for r in range(14):
        s = SIGMA[r % 10]
        for g, (a, b, cc, d) in enumerate(_G_INDEX):
            x, y = s[2 * g], s[2 * g + 1]
            v[a] = v[a] + v[b] + (m[x] ^ c[y])
            v[d] = _rotr32(v[d] ^ v[a], 16)
            v[cc] = v[cc] + v[d]
            v[b] = _rotr32(v[b] ^ v[cc], 12)
            v[a] = v[a] + v[b] + (m[y] ^ c[x])
            v[d] = _rotr32(v[d] ^ v[a], 8)
            v[cc] = v[cc] + v[d]
            v[b] = _rotr32(v[b] ^ v[cc], 7)
    return [np.broadcast_to(h[k], shape) ^ v[k] ^ v[k + 8] for k in range(8)]


def _be_words(block: bytes) -> list[np.ndarray]:
    return [np.array([int.from_bytes(block[4 * k: 4 * k + 4], "big")], dtype=np.uint32) for k in range(16)]


def blake256(data: bytes) -> bytes:
    """BLAKE-256 (unsalted) of a byte string: the 32-byte digest."""
    data = bytes(data)
    n = len(data)
    padded = bytearray(data)
    padded.append(0x80)
    while len(padded) % 64 != 56:
        padded.append(0)
    padded[-1] |= 0x01
    padded += (8 * n).to_bytes(8, "big")
    h = [np.array([w], dtype=np.uint32) for w in _B256_IV]
    for b in range(len(padded) // 64):
        # the counter: message bits hashed so far; 0 for a block holding only padding
        bits = 8 * min(n, 64 * (b + 1)) if 64 * b < n else 0
        h = _blake256_compress(h, _be_words(padded[64 * b: 64 * b + 64]), bits & 0xFFFFFFFF, bits >> 32)
    return b"".join(int(w[0]).to_bytes(4, "big") for w in h)


def blake256_values(header, start_nonce: int, num_nonces: int) -> np.ndarray:
    """BLAKE-256 of the 80-byte header per nonce (vectorised over the nonces)."""
    base = header_bytes(header, 80)
    nonces = np.array(_nonces(start_nonce, num_nonces), dtype=np.uint64)
    if nonces.size == 0:
        return np.empty(0, dtype=np.uint64)
    first = _be_words(base[:64])
    mid = _blake256_compress([np.array([w], dtype=np.uint32) for w in _B256_IV], first, 512, 0)
    w = np.frombuffer(base[64:80], dtype="<u4").astype(np.uint32)  # the 4 raw words 16..19

    def bswap(x: np.ndarray) -> np.ndarray:
        return x.astype(np.uint32).byteswap()

    lo = (nonces & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    hi = (nonces >> np.uint64(32)).astype(np.uint32)
    m = [bswap(np.array([w[0]])), bswap(np.array([w[1]])), bswap(w[2] ^ hi), bswap(lo),
         np.array([0x80000000], dtype=np.uint32)]
    m += [np.zeros(1, dtype=np.uint32) for _ in range(8)]
    m += [np.array([1], dtype=np.uint32), np.zeros(1, dtype=np.uint32), np.array([640], dtype=np.uint32)]
    h = _blake256_compress(mid, m, 640, 0)
    return (h[0].astype(np.uint64) << np.uint64(32)) | h[1].astype(np.uint64)


# ----------------------------------------------------------------------------- Ethash
def keccak512(data: bytes) -> bytes:
    from Crypto.Hash import keccak

    return keccak.new(digest_bits=512, data=bytes(data)).digest()


def keccak256(data: bytes) -> bytes:
    from Crypto.Hash import keccak

    return keccak.new(digest_bits=256, data=bytes(data)).digest()


def fnv(a, b):
    """FNV-1 style mixing of Ethash, 32-bit: (a * 0x01000193) ^ b (works on arrays)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (np.asarray(a, dtype=np.uint32) * np.uint32(FNV_PRIME)) ^ np.asarray(b, dtype=np.uint32)
    return ((int(a) * FNV_PRIME) & 0xFFFFFFFF) ^ (int(b) & 0xFFFFFFFF)


def ethash_seed(header_hash, nonce: int) -> bytes:
    """Keccak-512(header hash (32 bytes) || nonce (8 bytes, little-endian))."""
    return keccak512(header_bytes(header_hash, 32) + (int(nonce) & MASK64).to_bytes(8, "little"))


def dag_pages(dag) -> np.ndarray:
    """The DAG as a (num_pages, 32) uint32 array (from bytes or any uint32 array)."""
    if isinstance(dag, (bytes, bytearray, memoryview)):
        words = np.frombuffer(bytes(dag), dtype="<u4")
    else:
        words = np.asarray(dag).view(np.uint8).reshape(-1).view("<u4")
    if words.size == 0 or words.size % PAGE_WORDS:
        raise ValueError("the DAG must be a non-empty whole number of 128-byte pages")
    return words.astype(np.uint32, copy=False).reshape(-1, PAGE_WORDS)


def ethash_values(header_hash, start_nonce: int, num_nonces: int, dag,
                  return_pages: bool = False):
    """The hashimoto loop per nonce (vectorised over nonces).

    Returns the uint64 values; with ``return_pages`` also the (num_nonces, 64) page
    indices each nonce read, in order.
    """
    pages = dag_pages(dag)
    num_pages = np.uint32(pages.shape[0])
    hh = header_bytes(header_hash, 32)
    nonces = _nonces(start_nonce, num_nonces)
    n = len(nonces)
    seeds = b"".join(keccak512(hh + nonce.to_bytes(8, "little")) for nonce in nonces)
    seed_words = np.frombuffer(seeds, dtype="<u4").astype(np.uint32).reshape(n, 16)
    mix = np.concatenate([seed_words, seed_words], axis=1)  # (n, 32)
    s0 = seed_words[:, 0]
    read = np.empty((n, ETHASH_ROUNDS), dtype=np.uint32)
    for r in range(ETHASH_ROUNDS):
        p = fnv(np.uint32(r) ^ s0, mix[:, r % 32]) % num_pages
        read[:, r] = p
        mix = fnv(mix, pages[p])
    m = mix.reshape(n, 8, 4)
    cmix = fnv(fnv(fnv(m[:, :, 0], m[:, :, 1]), m[:, :, 2]), m[:, :, 3])  # (n, 8)
    cmix_bytes = cmix.astype("<u4").tobytes()
    out = np.empty(n, dtype=np.uint64)
    for i in range(n):
        digest = keccak256(seeds[64 * i: 64 * i + 64] + cmix_bytes[32 * i: 32 * i + 32])
        out[i] = _first8(digest)
    return (out, read) if return_pages else out


# ----------------------------------------------------------------------------- search
VALUE_FUNCTIONS: dict[str, Callable[..., np.ndarray]] = {
    "sha256": sha256d_values,
    "blake256": blake256_values,
    "blake2b": blake2b_values,
    "ethash": ethash_values,
}


def search(name: str, header, start_nonce: int, num_nonces: int, target: int, dag=None):
    """What kernel ``name`` computes: (values uint64[num_nonces], found nonces uint64, sorted).

    ``found`` holds every nonce whose value is <= target (the kernel's found_count is its
    length; the kernel keeps the first max_found of them, in no particular order).
    """
    if name == "ethash":
        if dag is None:
            raise ValueError("ethash needs the DAG")
        values = ethash_values(header, start_nonce, num_nonces, dag)
    else:
        values = VALUE_FUNCTIONS[name](header, start_nonce, num_nonces)
    idx = np.nonzero(values <= np.uint64(int(target) & MASK64))[0]
    found = ((np.uint64(int(start_nonce) & MASK64) + idx.astype(np.uint64)) & np.uint64(MASK64)).astype(np.uint64)
    return values, np.sort(found)
