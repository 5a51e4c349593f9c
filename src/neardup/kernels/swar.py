"""SIMD-within-a-register helpers: eight bytes of a UTF-8 buffer at a time in one uint64.

``load_u64`` reads 8 bytes at any offset (little-endian: the first byte is the low byte),
``bswap64`` reverses them, ``cttz64`` counts trailing zero bits — LLVM intrinsics, one instruction
each on x86-64 and ARM64 (``prefetch``, a hint to load a cache line, lives here with them).
Byte-class tests follow the classic carry-free formulation (Warren, *Hacker's Delight*, §6-1): for
bytes y < 0x80, ``(y + (0x7F − m)·0x0101…01) & 0x8080…80`` sets the high bit of exactly the bytes
greater than m, with no carry between bytes.
"""
from __future__ import annotations

import sys

import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

ONES = np.uint64(0x0101010101010101)
HIGH = np.uint64(0x8080808080808080)
LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
CASE = np.uint64(0x2020202020202020)
GATHER = np.uint64(0x0102040810204080)  # (b·GATHER) >> 56 gathers bit 0 of each byte k of b into bit k
# the word-at-a-time kernels assume the first byte in memory is the low byte of a load; on a
# big-endian machine their callers fall back to the byte-at-a-time kernels (same results)
LITTLE_ENDIAN = sys.byteorder == "little"


@intrinsic
def load_u64(typingctx, arr, idx):
    """The 8 bytes ``arr[idx:idx+8]`` of a uint8 array as a little-endian uint64 (unaligned load;
    the caller guarantees ``idx + 8 <= arr.shape[0]``)."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1 and arr.layout == "C" and arr.dtype == types.uint8):
        return None  # typing error: a contiguous 1-d uint8 array is required
    sig = types.uint64(arr, types.intp)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        ptr = builder.gep(ary.data, [args[1]])
        return builder.load(builder.bitcast(ptr, ir.IntType(64).as_pointer()), align=1)

    return sig, codegen


@intrinsic
def bswap64(typingctx, x):
    """Byte reversal: the first byte in memory becomes the most significant."""
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        return builder.bswap(args[0])

    return sig, codegen


@intrinsic
def cttz64(typingctx, x):
    """Number of trailing zero bits (64 for 0)."""
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 0))

    return sig, codegen


@njit(inline="always", cache=True)
def _gt(y, m):
    """High bit of each byte of y (all bytes < 0x80) set where the byte is > m."""
    return (y + np.uint64(0x7F - m) * ONES) & HIGH


@njit(inline="always", cache=True)
def alnum_bits(x):
    """High bit of each byte of x set where the byte is ASCII [0-9A-Za-z]. Letters are tested
    after OR 0x20, which maps exactly A–Z and a–z into a–z."""
    y = x & LOW7
    z = y | CASE
    return ((_gt(y, 0x2F) & ~_gt(y, 0x39)) | (_gt(z, 0x60) & ~_gt(z, 0x7A))) & ~x & HIGH


@njit(cache=True)
def any_non_ascii(buf, start, end):
    """Whether ``buf[start:end]`` holds a byte >= 0x80."""
    acc = np.uint64(0)
    i = start
    while i + 8 <= end:
        acc |= load_u64(buf, i)
        i += 8
    while i < end:
        acc |= np.uint64(buf[i])
        i += 1
    return (acc & HIGH) != 0


#: how many pairs ahead the pair kernels prefetch their rows (4–16 measured alike; 8 with room)
AHEAD = 8


@intrinsic
def prefetch(typingctx, arr, idx):  # (any 1-d array: a row of a matrix is one)
    """A hint that ``arr[idx]`` will be read soon (LLVM's ``llvm.prefetch``: read, keep in all cache
    levels): the load of a cache line starts while other work goes on. No effect on results; the
    address need not be valid (a prefetch never faults), but callers keep ``idx`` in range."""
    if not (isinstance(arr, types.Array) and arr.ndim == 1):
        return None
    sig = types.void(arr, types.intp)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        item = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]], wraparound=False)
        ptr = builder.bitcast(item, ir.IntType(8).as_pointer())
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [ptr.type, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [ptr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
        return context.get_dummy_value()

    return sig, codegen


@njit(inline="always", cache=True)
def prefetch_range(arr, start, end):
    """:func:`prefetch` of every cache line of ``arr[start:end]`` (1-d)."""
    for t in range(start, end, max(1, 64 // arr.itemsize)):
        prefetch(arr, t)


@njit(inline="always", cache=True)
def prefetch_row(mat, r):
    """:func:`prefetch` of every cache line of row ``r`` of a 2-d array."""
    row = mat[r]
    prefetch_range(row, 0, row.shape[0])


@intrinsic
def equal_pairs_4x4(typingctx, ha, i, hb, j):
    """How many of the 16 pairs (ha[i + x], hb[j + y]), x, y < 4, are equal (uint64 arrays; the caller
    keeps i + 4 and j + 4 within them): b compared with a in its four rotations, four vector
    compares of four lanes (AVX2 ``vpcmpeqq``; numba would compare one pair at a time)."""
    if not all(isinstance(t, types.Array) and t.ndim == 1 and t.layout == "C" and t.dtype == types.uint64
               for t in (ha, hb)):
        return None
    sig = types.int64(ha, types.intp, hb, types.intp)

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        i32 = ir.IntType(32)
        v4 = ir.VectorType(i64, 4)

        def load4(aryty, arr, idx):
            ary = context.make_array(aryty)(context, builder, arr)
            return builder.load(builder.bitcast(builder.gep(ary.data, [idx]), v4.as_pointer()), align=8)

        a = load4(signature.args[0], args[0], args[1])
        b = load4(signature.args[2], args[2], args[3])
        total = None
        for r in range(4):
            turn = ir.Constant(ir.VectorType(i32, 4), [(x + r) % 4 for x in range(4)])
            br = b if r == 0 else builder.shuffle_vector(b, b, turn)
            hit = builder.zext(builder.icmp_unsigned("==", a, br), v4)
            total = hit if total is None else builder.add(total, hit)
        out = builder.extract_element(total, ir.Constant(i32, 0))
        for x in range(1, 4):
            out = builder.add(out, builder.extract_element(total, ir.Constant(i32, x)))
        return out

    return sig, codegen


@intrinsic
def borrowed(typingctx, arr):
    """A view of ``arr`` (same data, shape and strides) that holds no reference to its memory.

    Numba counts references with an atomic add and subtract on the array's meminfo whenever an
    array is bound to a new name that it cannot prove short-lived — each call of an inlined helper
    that uses the array inside a branch, for instance: about 27 ns per array per call, measured
    (a loop calling such a helper: 28.4 ns per call, 1.0 ns on a borrowed view). A borrowed view
    has a null meminfo, so those operations do nothing. Only for arrays a caller holds for the whole
    call (a kernel's parameters, or arrays inside a parameter tuple), never a temporary (numba frees
    a variable after its last use, and the view would outlive the memory), and never returned or
    stored."""
    if not isinstance(arr, types.Array):
        return None
    sig = arr(arr)

    def codegen(context, builder, signature, args):
        src = context.make_array(signature.args[0])(context, builder, args[0])
        out = context.make_array(signature.return_type)(context, builder)
        for name in ("nitems", "itemsize", "data", "shape", "strides"):
            setattr(out, name, getattr(src, name))
        out.meminfo = cgutils.get_null_value(out.meminfo.type)
        out.parent = cgutils.get_null_value(out.parent.type)
        return out._getvalue()

    return sig, codegen
