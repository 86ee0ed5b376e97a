"""The compiler's stacked fast paths give what the one-at-a-time code gives.

The compiler computes rotations, body poses and the inverse mass matrix for many
bodies at once (rotation.quat2mat_batch, quat_mul_batch; tendon.TreeBlocks; the fields
of empty sections replayed by empty.replay_empty). These tests check each against the
item-by-item code it replaced: element-by-element arithmetic bit for bit, block
inverses against the dense inverse, and replayed fields as arrays of each model's own.
No timing is asserted (benchmarks/bench_compile.py measures time).
"""
from __future__ import annotations

import numpy as np

import tiphys
from tiphys.compiler import rotation as rot
from tiphys.compiler.actuator import _block_inverse
from tiphys.compiler.compile import compile_spec
from tiphys.compiler.tendon import TreeBlocks


def _quats(n: int, seed: int) -> np.ndarray:
    """Unit and non-unit quaternions, identities with signed zeros, zero ones."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n, 4))
    q[: n // 2] /= np.linalg.norm(q[: n // 2], axis=1)[:, None]
    q[0], q[1], q[2], q[3] = (1, 0, 0, 0), (1, -0.0, 0, -0.0), (0, 0, 0, 0), (-1, 0, 0, 0)
    return q


def _same_bits(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def test_quat2mat_batch_is_quat2mat_bit_for_bit():
    q = _quats(200, 0)
    mats = rot.quat2mat_batch(q)
    assert all(_same_bits(rot.quat2mat(qi), m) for qi, m in zip(q, mats))
    small = rot.quat2mat_batch(q[:5])  # (the item-by-item branch)
    assert all(_same_bits(rot.quat2mat(qi), m) for qi, m in zip(q[:5], small))


def test_quat_mul_batch_is_quat_mul_bit_for_bit():
    a, b = _quats(300, 1), _quats(300, 2)[::-1].copy()
    prod = rot.quat_mul_batch(a, b)
    assert all(_same_bits(rot.quat_mul(x, y), p) for x, y, p in zip(a, b, prod))


def test_tree_block_inverse_matches_dense_inverse():
    """Trees of different sizes (and equal ones, inverted in one stacked call)."""
    rng = np.random.default_rng(3)
    sizes = [3, 1, 6, 3, 2, 6]
    treeid = np.repeat(np.arange(len(sizes)), sizes)
    nv = len(treeid)
    M = np.zeros((nv, nv))
    lo = 0
    for n in sizes:
        A = rng.standard_normal((n, n))
        M[lo:lo + n, lo:lo + n] = A @ A.T + n * np.eye(n)
        lo += n
    blocks = TreeBlocks.from_dense(M, treeid)
    assert _same_bits(blocks.dense(), M)
    assert _same_bits(blocks.diag(), np.diag(M))
    inv = _block_inverse(blocks).dense()
    np.testing.assert_allclose(inv, np.linalg.inv(M), rtol=1e-12, atol=1e-12)
    assert _same_bits(_block_inverse(blocks).sub([8, 7, 6]), inv[8:5:-1, 8:5:-1])


def test_tree_block_inverse_of_a_singular_tree_is_its_pseudo_inverse():
    M = np.diag([2.0, 0.0, 4.0])
    M[1, 2] = M[2, 1] = 0.0
    blocks = TreeBlocks.from_dense(M, [0, 1, 1])  # tree 1 is singular
    inv = _block_inverse(blocks).dense()
    np.testing.assert_allclose(inv, np.linalg.pinv(M), atol=1e-15)


def test_empty_sections_give_each_model_its_own_arrays():
    """Fields replayed for sections without elements are copies, not shared arrays."""
    xml = "<mujoco><worldbody><body><joint/><geom size='.1'/></body></worldbody></mujoco>"
    a = compile_spec(tiphys.parse_xml(xml))
    b = compile_spec(tiphys.parse_xml(xml))
    for name in ("tendon_adr", "actuator_gainprm", "mesh_vert", "sensor_type", "cam_pos",
                 "light_pos", "site_pos", "mat_rgba", "tex_data", "hfield_data"):
        x, y = getattr(a, name), getattr(b, name)
        assert x is not y and not np.shares_memory(x, y), name
        assert x.shape == y.shape and x.dtype == y.dtype, name
    assert a.sizes == b.sizes
