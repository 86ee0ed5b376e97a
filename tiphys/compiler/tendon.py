"""<tendon>: fixed and spatial tendons, their model fields, and host kinematics at qpos0.

The compile-time constants MuJoCo's setConst derives from tendons (``tendon_length0``,
``tendon_invweight0``, ``tendon_lengthspring`` for springlength -1) need the tendon
length and Jacobian at qpos0 (and qpos_spring) and the inverse mass matrix. They are
computed here on the host in numpy: :class:`HostKinematics` ports mj_kinematics,
mj_jac, the dense mass matrix (mj_crb + tendon armature) and mj_tendon, including
spatial wrapping around spheres and cylinders (mju_wrap).
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from ..errors import error_at
from ..kernels.consts import (GEOM_CYLINDER, GEOM_SPHERE, JNT_BALL, JNT_FREE, JNT_SLIDE,
                              LIMITED_AUTO, LIMITED_FALSE, LIMITED_TRUE, MINVAL, WRAP_CYLINDER,
                              WRAP_JOINT, WRAP_NONE, WRAP_PULLEY, WRAP_SITE, WRAP_SPHERE)
from . import rotation as rot
from .attach import element_ctx
from .attrs import LIMITED, Attrs
from .empty import replay_empty

SOLREF0 = (0.02, 1.0)
_FEW_DOFS = 48  # up to this many dofs (or Jacobian chain entries): Python lists
SOLIMP0 = (0.9, 0.95, 0.001, 0.5, 2.0)


# ------------------------------------------------------------------------------------
# host kinematics (mj_kinematics, mj_jac, mass matrix) on ModelArrays
# ------------------------------------------------------------------------------------

def _quat2mat(q):
    return rot.quat2mat(np.asarray(q, dtype=np.float64))


def _norm(v) -> float:
    """np.linalg.norm of a float64 vector with its own arithmetic (x.dot(x) on the
    raveled vector, then a correctly rounded square root), without its per-call checks
    (a few microseconds each, in loops over tendon segments)."""
    x = np.asarray(v)
    if x.dtype != np.float64:
        return float(np.linalg.norm(x))
    x = x.ravel(order="K")
    return math.sqrt(x.dot(x))


def _chain_block(chain):
    """Index of the rows and columns of a dof chain (decreasing dof ids): a reversed
    slice when the dofs are consecutive (most chains: np.ix_ is slow), else np.ix_."""
    hi, lo = chain[0], chain[-1]
    if hi - lo + 1 == len(chain) and chain == list(range(hi, lo - 1, -1)):
        rows = slice(hi, lo - 1 if lo > 0 else None, -1)
        return rows, rows
    return np.ix_(chain, chain)


class HostKinematics:
    """Positions, orientations, Jacobians and the dense mass matrix at one qpos."""

    def __init__(self, a, qpos):
        self.a = a
        self.qpos = np.asarray(qpos, dtype=np.float64)
        self._chains = None
        self._body_jacs = None
        self._axes_lists = None  # dof_ang, dof_anchor, dof_lin as lists (jac_pos)
        nbody = len(a.body_parentid)
        njnt = len(a.jnt_type)
        xpos = np.zeros((nbody, 3))
        xquat = rot.unit_quats(nbody)
        xanchor = np.zeros((njnt, 3))
        xaxis = np.zeros((njnt, 3))
        jntadr_b, jntnum_b = a.body_jntadr.tolist(), a.body_jntnum.tolist()
        jnt_type = a.jnt_type.tolist()
        free = [b for b in range(1, nbody)
                if jntnum_b[b] == 1 and jnt_type[jntadr_b[b]] == JNT_FREE]
        if len(free) < 8:  # few: one by one below (fewer numpy calls)
            free = []
        if free:
            # free bodies (children of the world) all at once: normalize's norm is
            # the sequential sum of squares, as np.dot sums 4 numbers
            fj = a.body_jntadr[free]
            qa = a.jnt_qposadr[fj][:, None]
            xpos[free] = self.qpos[qa + np.arange(3)]
            q = self.qpos[qa + np.arange(3, 7)]
            n = np.sqrt((q * q).sum(1))
            small = n < rot.EPS
            q = q / np.where(small, 1.0, n)[:, None]
            q[small] = (1.0, 0.0, 0.0, 0.0)
            xquat[free] = q
            xanchor[fj] = xpos[free]
            xaxis[fj] = rot.matvec_batch(rot.quat2mat_batch(q), a.jnt_axis[fj])
        isfree = set(free)
        parent = a.body_parentid.tolist()
        body_pos, body_quat = list(a.body_pos), a.body_quat.tolist()
        jnt_pos, jnt_axis = list(a.jnt_pos), list(a.jnt_axis)
        jnt_axis_l = a.jnt_axis.tolist()
        qposadr, qpos, qpos0 = a.jnt_qposadr.tolist(), self.qpos, a.qpos0
        xmats = {}  # body -> rotation of xquat[body], made when a child needs it
        # quaternions on Python floats through each body's joints (the arithmetic of
        # rot.quat_mul and rot.quat2mat, without a numpy array per step)
        cache = [None, None]

        def rotation(q):
            """quat2mat(q), reusing the last matrix while q is the same quaternion."""
            if cache[0] is not q:
                cache[0], cache[1] = q, rot.quat2mat(q)
            return cache[1]

        for b in range(1, nbody):
            if b in isfree:
                continue
            jadr, jnum = jntadr_b[b], jntnum_b[b]
            if jnum == 1 and jnt_type[jadr] == JNT_FREE:
                qa = qposadr[jadr]
                xpos[b] = qpos[qa:qa + 3]
                xquat[b] = rot.normalize(qpos[qa + 3:qa + 7])[0]
                xanchor[jadr] = xpos[b]
                xaxis[jadr] = _quat2mat(xquat[b]) @ a.jnt_axis[jadr]
                continue
            p = parent[b]
            pmat = xmats.get(p)
            if pmat is None:
                pmat = xmats[p] = _quat2mat(xquat[p])
            pos = xpos[p] + pmat @ body_pos[b]
            quat = rot.mulquat_exact(xquat[p].tolist(), body_quat[b])
            for j in range(jadr, jadr + jnum):
                mat = rotation(quat)
                xanchor[j] = mat @ jnt_pos[j] + pos
                xaxis[j] = mat @ jnt_axis[j]
                qa = qposadr[j]
                jt = jnt_type[j]
                if jt == 2:  # slide
                    pos = pos + xaxis[j] * (qpos[qa] - qpos0[qa])
                elif jt in (1, 3):
                    if jt == 3:
                        half = float(qpos[qa] - qpos0[qa]) / 2
                        s = math.sin(half)
                        ax = jnt_axis_l[j]
                        qloc = [math.cos(half), ax[0] * s, ax[1] * s, ax[2] * s]
                    else:
                        qloc = rot.normalize(qpos[qa:qa + 4])[0].tolist()
                    quat = rot.mulquat_exact(quat, qloc)
                    pos = xanchor[j] - rotation(quat) @ jnt_pos[j]
            xpos[b] = pos
            xquat[b] = rot.normalize(quat)[0]
        xmat = rot.quat2mat_batch(xquat)
        self.xpos, self.xquat, self.xmat = xpos, xquat, xmat
        self.xanchor, self.xaxis = xanchor, xaxis
        self.xipos = xpos + np.einsum("bij,bj->bi", xmat, a.body_ipos)
        self.ximat = xmat @ rot.quat2mat_batch(a.body_iquat)
        self._dof_axes()

    # site and geom frames: made when first read (most models read none of them)
    @functools.cached_property
    def site_xpos(self):
        sb = self.a.site_bodyid
        return self.xpos[sb] + rot.matvec_batch(self.xmat[sb], self.a.site_pos)

    @functools.cached_property
    def site_xmat(self):
        return self.xmat[self.a.site_bodyid] @ rot.quat2mat_batch(self.a.site_quat)

    @functools.cached_property
    def geom_xpos(self):
        gb = self.a.geom_bodyid
        return self.xpos[gb] + rot.matvec_batch(self.xmat[gb], self.a.geom_pos)

    @functools.cached_property
    def geom_xmat(self):
        return self.xmat[self.a.geom_bodyid] @ rot.quat2mat_batch(self.a.geom_quat)

    def _dof_axes(self):
        """Per dof: world rotation axis (or 0) and linear axis, and the anchor point
        (rows copied from the joint frames: gathered per kind, set in a few calls)."""
        a = self.a
        nv = len(a.dof_bodyid)
        if nv <= _FEW_DOFS:
            self._few_dof_axes(nv)
            return
        self.dof_ang = np.zeros((nv, 3))
        self.dof_lin = np.zeros((nv, 3))
        self.dof_anchor = np.zeros((nv, 3))
        lin_d, lin_k = [], []  # dof_lin[d, k] = 1 (free joints' translations)
        col_d, col_b, col_k = [], [], []  # dof_ang[d] = xmat[b][:, k]
        anc_d, anc_j = [], []  # dof_anchor[d] = xanchor[j]
        axis_d, axis_j = [], []  # dof_ang[d] = xaxis[j] (hinge)
        slide_d, slide_j = [], []  # dof_lin[d] = xaxis[j]
        for j, (jt, d, b) in enumerate(zip(a.jnt_type.tolist(), a.jnt_dofadr.tolist(),
                                           a.jnt_bodyid.tolist())):
            if jt == 0:
                lin_d += (d, d + 1, d + 2)
                lin_k += (0, 1, 2)
                col_d += (d + 3, d + 4, d + 5)
                col_b += (b, b, b)
                col_k += (0, 1, 2)
                anc_d += (d + 3, d + 4, d + 5)
                anc_j += (j, j, j)
            elif jt == 1:
                col_d += (d, d + 1, d + 2)
                col_b += (b, b, b)
                col_k += (0, 1, 2)
                anc_d += (d, d + 1, d + 2)
                anc_j += (j, j, j)
            elif jt == 2:
                slide_d.append(d)
                slide_j.append(j)
            else:
                axis_d.append(d)
                axis_j.append(j)
                anc_d.append(d)
                anc_j.append(j)
        if lin_d:
            self.dof_lin[lin_d, lin_k] = 1.0
        if col_d:
            self.dof_ang[col_d] = self.xmat[col_b, :, col_k]
        if axis_d:
            self.dof_ang[axis_d] = self.xaxis[axis_j]
        if slide_d:
            self.dof_lin[slide_d] = self.xaxis[slide_j]
        if anc_d:
            self.dof_anchor[anc_d] = self.xanchor[anc_j]

    def _few_dof_axes(self, nv: int) -> None:
        """_dof_axes for a few dofs: the rows gathered as Python lists (copies of the
        same numbers), each array made at once."""
        a = self.a
        xmat, xaxis, xanchor = self.xmat.tolist(), self.xaxis.tolist(), self.xanchor.tolist()
        zero = [0.0, 0.0, 0.0]
        ang, lin, anchor = [zero] * nv, [zero] * nv, [zero] * nv
        for j, (jt, d, b) in enumerate(zip(a.jnt_type.tolist(), a.jnt_dofadr.tolist(),
                                           a.jnt_bodyid.tolist())):
            if jt in (JNT_FREE, JNT_BALL):
                m = xmat[b]
                cols = [[m[0][k], m[1][k], m[2][k]] for k in range(3)]
                r = d + 3 if jt == JNT_FREE else d  # the rotational dofs
                ang[r:r + 3] = cols
                anchor[r:r + 3] = [xanchor[j]] * 3
                if jt == JNT_FREE:
                    lin[d:d + 3] = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
            elif jt == JNT_SLIDE:
                lin[d] = xaxis[j]
            else:
                ang[d] = xaxis[j]
                anchor[d] = xanchor[j]
        self.dof_ang = np.array(ang, dtype=np.float64).reshape(nv, 3)
        self.dof_lin = np.array(lin, dtype=np.float64).reshape(nv, 3)
        self.dof_anchor = np.array(anchor, dtype=np.float64).reshape(nv, 3)

    def chain(self, body):
        """Dofs that move ``body`` (mj_jac's ancestor chain; the list is shared)."""
        chains = self._chains
        if chains is None:
            chains = self._chains = _dof_chains(self.a)
        return chains[body]

    def jac(self, point, body):
        """Translational and rotational 3 x nv Jacobians of a point on ``body``."""
        nv = len(self.a.dof_bodyid)
        jp, jr = np.zeros((3, nv)), np.zeros((3, nv))
        chain = self.chain(body)
        if chain:
            jp[:, chain], jr[:, chain] = self.chain_jac(point, chain)
        return jp, jr

    def jac_pos(self, point, body):
        """The translational Jacobian of :meth:`jac` alone (a short chain's columns on
        Python floats: chain_jac's elementwise operations, without its arrays)."""
        jp = np.zeros((3, len(self.a.dof_bodyid)))
        chain = self.chain(body)
        if len(chain) > _FEW_DOFS:
            jp[:, chain] = self.chain_jac(point, chain)[0]
        elif chain:
            if self._axes_lists is None:
                self._axes_lists = (self.dof_ang.tolist(), self.dof_anchor.tolist(),
                                    self.dof_lin.tolist())
            ang, anchor, lin = self._axes_lists
            p0, p1, p2 = np.asarray(point, dtype=np.float64).tolist()
            cols = ([], [], [])
            for d in chain:
                w, a, li = ang[d], anchor[d], lin[d]
                v0, v1, v2 = p0 - a[0], p1 - a[1], p2 - a[2]
                cols[0].append((w[1] * v2 - w[2] * v1) + li[0])
                cols[1].append((w[2] * v0 - w[0] * v2) + li[1])
                cols[2].append((w[0] * v1 - w[1] * v0) + li[2])
            jp[:, chain] = cols
        return jp

    def chain_jac(self, point, chain):
        """The Jacobians' columns of the dofs in ``chain`` (the others are zero), as
        C-ordered 3 x len(chain) arrays (as a column selection of the full Jacobian,
        so that products with them round the same way). The translational part is
        cross(ang, point - anchor) + lin, per dof, with np.cross's operations."""
        w = self.dof_ang[chain].T
        v = (point - self.dof_anchor[chain]).T
        lin = self.dof_lin[chain].T
        jp = np.empty((3, len(chain)))
        jp[0] = (w[1] * v[2] - w[2] * v[1]) + lin[0]
        jp[1] = (w[2] * v[0] - w[0] * v[2]) + lin[1]
        jp[2] = (w[0] * v[1] - w[1] * v[0]) + lin[2]
        return jp, np.ascontiguousarray(w)

    def chain_jacs(self, points, chains):
        """:meth:`chain_jac` of many points, one per chain (all chains of one length):
        (B, 3, L) arrays, each item computed as :meth:`chain_jac` computes it (element
        by element, so bit for bit the same)."""
        w = self.dof_ang[chains].transpose(0, 2, 1)
        v = (points[:, None, :] - self.dof_anchor[chains]).transpose(0, 2, 1)
        lin = self.dof_lin[chains].transpose(0, 2, 1)
        jp = np.empty(w.shape)
        jp[:, 0] = (w[:, 1] * v[:, 2] - w[:, 2] * v[:, 1]) + lin[:, 0]
        jp[:, 1] = (w[:, 2] * v[:, 0] - w[:, 0] * v[:, 2]) + lin[:, 1]
        jp[:, 2] = (w[:, 0] * v[:, 1] - w[:, 1] * v[:, 0]) + lin[:, 2]
        return jp, np.ascontiguousarray(w)

    def mass_matrix(self):
        """Dense M at this pose: body inertias + dof armature (no tendon armature)."""
        return self.mass_blocks().dense()

    def body_jacs_of(self, keep):
        """(bodies, jp, jr) of :meth:`body_jacs`, per chain length, of the bodies b
        with ``keep[b]`` true (chain lengths with none left out)."""
        for group, jp, jr in self.body_jacs().values():
            sel = [i for i, b in enumerate(group) if keep[b]]
            if not sel:
                continue
            if len(sel) < len(group):
                group = [group[i] for i in sel]
                jp, jr = jp[sel], jr[sel]
            yield group, jp, jr

    def body_jacs(self) -> dict:
        """The com Jacobians of every body with dofs, as :meth:`chain_jacs` makes
        them, grouped by chain length: {L: (bodies, jp, jr)} with (B, 3, L) stacks
        (made once, element by element for all bodies together)."""
        if self._body_jacs is not None:
            return self._body_jacs
        nbody = len(self.a.body_parentid)
        bodies = [b for b in range(1, nbody) if self.chain(b)]
        groups = {}  # chain length -> bodies
        for b in bodies:
            groups.setdefault(len(self.chain(b)), []).append(b)
        out = {}
        if bodies and sum(len(self.chain(b)) for b in bodies) <= _FEW_DOFS:
            self._few_body_jacs(groups, out)
        elif bodies:
            flat = [d for b in bodies for d in self.chain(b)]
            owner = [b for b in bodies for _ in self.chain(b)]
            w = self.dof_ang[flat]
            v = self.xipos[owner] - self.dof_anchor[flat]
            lin = self.dof_lin[flat]
            jp = np.empty(w.shape)
            jp[:, 0] = (w[:, 1] * v[:, 2] - w[:, 2] * v[:, 1]) + lin[:, 0]
            jp[:, 1] = (w[:, 2] * v[:, 0] - w[:, 0] * v[:, 2]) + lin[:, 1]
            jp[:, 2] = (w[:, 0] * v[:, 1] - w[:, 1] * v[:, 0]) + lin[:, 2]
            start, k = {}, 0
            for b in bodies:
                start[b] = k
                k += len(self.chain(b))
            for n, group in groups.items():
                idx = np.array([start[b] for b in group])[:, None] + np.arange(n)
                out[n] = (group, np.ascontiguousarray(jp[idx].transpose(0, 2, 1)),
                          np.ascontiguousarray(w[idx].transpose(0, 2, 1)))
        self._body_jacs = out
        return out

    def _few_body_jacs(self, groups: dict, out: dict) -> None:
        """body_jacs on Python floats (for few chain entries, where numpy's per-call
        cost dominates): the same elementwise operations, each stack made at once."""
        ang, anchor = self.dof_ang.tolist(), self.dof_anchor.tolist()
        lin, xipos = self.dof_lin.tolist(), self.xipos.tolist()
        for n, group in groups.items():
            jps, jrs = [], []
            for b in group:
                p = xipos[b]
                jp, jr = ([], [], []), ([], [], [])
                for d in self.chain(b):
                    w, a, li = ang[d], anchor[d], lin[d]
                    v0, v1, v2 = p[0] - a[0], p[1] - a[1], p[2] - a[2]
                    jp[0].append((w[1] * v2 - w[2] * v1) + li[0])
                    jp[1].append((w[2] * v0 - w[0] * v2) + li[1])
                    jp[2].append((w[0] * v1 - w[1] * v0) + li[2])
                    jr[0].append(w[0])
                    jr[1].append(w[1])
                    jr[2].append(w[2])
                jps.append(jp)
                jrs.append(jr)
            shape = (len(group), 3, n)
            out[n] = (group, np.array(jps, dtype=np.float64).reshape(shape),
                      np.array(jrs, dtype=np.float64).reshape(shape))

    def mass_blocks(self) -> "TreeBlocks":
        """M at this pose, tree by tree: body inertias + dof armature (no tendon
        armature).

        Each body adds mass jp'jp + jr' I jr over its dof chain's block; the terms
        are computed for all bodies of one chain length at once (stacked matmuls do
        each item as the 2D product does) and added in body order."""
        a = self.a
        blocks = TreeBlocks.zeros(a.dof_treeid)
        mass, inertia = a.body_mass, a.body_inertia
        if len(mass) < 64:  # (few bodies: Python floats, fewer numpy calls)
            moving = [m != 0 or i0 != 0 or i1 != 0 or i2 != 0
                      for m, (i0, i1, i2) in zip(mass.tolist(), inertia.tolist())]
        else:
            moving = ((mass != 0) | np.any(inertia != 0, axis=1)).tolist()
        # rotated inertias of all bodies (3x3 products: one stacked call)
        diag = np.zeros((len(mass), 3, 3))
        diag[:, (0, 1, 2), (0, 1, 2)] = inertia
        inert_all = self.ximat @ diag @ self.ximat.transpose(0, 2, 1)
        terms = {}
        # only the dofs on the body's chain are nonzero in its Jacobian: adding the
        # chain's block keeps large scenes (thousands of dofs) O(sum chain^2)
        for group, jp, jr in self.body_jacs_of(moving):
            term = mass[group][:, None, None] * jp.transpose(0, 2, 1) @ jp + \
                jr.transpose(0, 2, 1) @ inert_all[group] @ jr
            terms.update(zip(group, term))
        tree_of, los = blocks.tree_of, blocks.los
        for b in sorted(terms):
            chain = self.chain(b)
            t = tree_of[chain[0]]
            lo = los[t]
            blocks.blocks[t][_chain_block([d - lo for d in chain])] += terms[b]
        armature = a.dof_armature
        for lo, block in zip(los, blocks.blocks):
            n = len(block)
            # the diagonal as a strided view of the (C-ordered) block: one add each
            block.reshape(-1)[::n + 1] += armature[lo:lo + n]
        return blocks


class TreeBlocks:
    """A block-diagonal nv x nv matrix with one dense block per kinematic tree (the
    dofs of a tree are consecutive): M and its inverse without nv^2 memory."""

    def __init__(self, los: list, blocks: list, tree_of: list):
        self.los, self.blocks, self.tree_of = los, blocks, tree_of
        self.nv = len(tree_of)

    @classmethod
    def zeros(cls, dof_treeid) -> "TreeBlocks":
        tree_of = np.asarray(dof_treeid).tolist()
        los = [d for d in range(len(tree_of)) if d == 0 or tree_of[d] != tree_of[d - 1]]
        his = los[1:] + [len(tree_of)]
        return cls(los, [np.zeros((hi - lo, hi - lo)) for lo, hi in zip(los, his)], tree_of)

    @classmethod
    def from_dense(cls, M, dof_treeid) -> "TreeBlocks":
        out = cls.zeros(dof_treeid)
        out.blocks = [M[lo:lo + len(b), lo:lo + len(b)].copy()
                      for lo, b in zip(out.los, out.blocks)]
        return out

    def diag(self) -> np.ndarray:
        if not self.blocks:
            return np.zeros(0)
        return np.concatenate([b.diagonal() for b in self.blocks])  # (np.diag is slow)

    def dense(self) -> np.ndarray:
        M = np.zeros((self.nv, self.nv))
        for lo, b in zip(self.los, self.blocks):
            M[lo:lo + len(b), lo:lo + len(b)] = b
        return M

    def sub(self, dofs) -> np.ndarray:
        """The rows and columns ``dofs`` (all in one tree; a chain's decreasing ids
        give a reversed slice when consecutive), a view or a copy."""
        t = self.tree_of[dofs[0]]
        lo = self.los[t]
        return self.blocks[t][_chain_block([d - lo for d in dofs])]

    def block(self, lo: int, n: int) -> np.ndarray:
        """Rows and columns lo..lo+n-1 (inside one tree), a view."""
        t = self.tree_of[lo]
        k = lo - self.los[t]
        return self.blocks[t][k:k + n, k:k + n]


def _dof_chains(a) -> list:
    """Per body, the dofs that move it (mj_jac's ancestor chain, decreasing ids)."""
    nbody = len(a.body_parentid)
    parent, dofnum = a.body_parentid.tolist(), a.body_dofnum.tolist()
    dofadr, dof_parent = a.body_dofadr.tolist(), a.dof_parentid.tolist()
    chains = [[] for _ in range(nbody)]
    for b in range(1, nbody):
        if not dofnum[b]:
            chains[b] = chains[parent[b]]
            continue
        chain = []
        d = dofadr[b] + dofnum[b] - 1
        while d >= 0:
            chain.append(d)
            d = dof_parent[d]
        chains[b] = chain
    return chains


# ------------------------------------------------------------------------------------
# tendon wrapping (mju_wrap)
# ------------------------------------------------------------------------------------

def _is_intersect(p1, p2, p3, p4):
    det = (p4[1] - p3[1]) * (p2[0] - p1[0]) - (p4[0] - p3[0]) * (p2[1] - p1[1])
    if abs(det) < MINVAL:
        return False
    a = ((p4[0] - p3[0]) * (p1[1] - p3[1]) - (p4[1] - p3[1]) * (p1[0] - p3[0])) / det
    b = ((p2[0] - p1[0]) * (p1[1] - p3[1]) - (p2[1] - p1[1]) * (p1[0] - p3[0])) / det
    return 0 <= a <= 1 and 0 <= b <= 1


def _normalize2(v):
    n = math.hypot(v[0], v[1])
    if n < MINVAL:
        return np.array([1.0, 0.0])
    return np.array([v[0] / n, v[1] / n])


def _length_circle(p0, p1, ind, radius):
    p0n, p1n = _normalize2(p0), _normalize2(p1)
    angle = math.acos(max(-1.0, min(1.0, float(p0n @ p1n))))
    cross = p0[1] * p1[0] - p0[0] * p1[1]
    if (cross > 0 and ind) or (cross < 0 and not ind):
        angle = 2 * math.pi - angle
    return radius * angle


def _wrap_circle(end, side, radius):
    sqlen0 = end[0] ** 2 + end[1] ** 2
    sqlen1 = end[2] ** 2 + end[3] ** 2
    sqrad = radius * radius
    if sqlen0 < sqrad or sqlen1 < sqrad or radius < MINVAL:
        return -1.0, None
    dif = np.array([end[2] - end[0], end[3] - end[1]])
    dd = dif @ dif
    if dd < MINVAL:
        return -1.0, None
    a = -(dif[0] * end[0] + dif[1] * end[1]) / dd
    a = min(max(a, 0.0), 1.0)
    tmp = np.array([a * dif[0] + end[0], a * dif[1] + end[1]])
    if tmp @ tmp > sqrad and (side is None or side @ tmp >= 0):
        return -1.0, None
    sqrt0 = math.sqrt(sqlen0 - sqrad)
    sqrt1 = math.sqrt(sqlen1 - sqrad)
    sol = np.zeros((2, 2, 2))
    good = [0.0, 0.0]
    for i in range(2):
        sgn = 1 if i == 0 else -1
        sol[i, 0, 0] = (end[0] * sqrad + sgn * radius * end[1] * sqrt0) / sqlen0
        sol[i, 0, 1] = (end[1] * sqrad - sgn * radius * end[0] * sqrt0) / sqlen0
        sol[i, 1, 0] = (end[2] * sqrad - sgn * radius * end[3] * sqrt1) / sqlen1
        sol[i, 1, 1] = (end[3] * sqrad + sgn * radius * end[2] * sqrt1) / sqlen1
        if side is not None:
            t = _normalize2(sol[i, 0] + sol[i, 1])
            good[i] = float(t @ side)
        else:
            t = sol[i, 0] - sol[i, 1]
            good[i] = -float(t @ t)
        if _is_intersect(end[0:2], sol[i, 0], end[2:4], sol[i, 1]):
            good[i] = -10000.0
    i = 0 if good[0] > good[1] else 1
    pnt = np.concatenate([sol[i, 0], sol[i, 1]])
    if _is_intersect(end[0:2], pnt[0:2], end[2:4], pnt[2:4]):
        return -1.0, None
    return _length_circle(sol[i, 0], sol[i, 1], i, radius), pnt


def _wrap_inside(end, radius):
    maxiter, zinit, tolerance = 20, 1 - 1e-7, 1e-6
    len0 = math.hypot(end[0], end[1])
    len1 = math.hypot(end[2], end[3])
    dif = np.array([end[2] - end[0], end[3] - end[1]])
    dd = dif @ dif
    if len0 <= radius or len1 <= radius or radius < MINVAL or len0 < MINVAL or len1 < MINVAL:
        return -1.0, None
    if dd > MINVAL:
        a = -(dif[0] * end[0] + dif[1] * end[1]) / dd
        if 0 < a < 1:
            tmp = end[0:2] + a * dif
            if math.hypot(tmp[0], tmp[1]) <= radius:
                return -1.0, None
    p = _normalize2(0.5 * (end[0:2] + end[2:4])) * radius
    pnt = np.array([p[0], p[1], p[0], p[1]])
    A = radius / len0
    B = radius / len1
    cosG = (len0 * len0 + len1 * len1 - dd) / (2 * len0 * len1)
    if cosG < -1 + MINVAL:
        return -1.0, None
    if cosG > 1 - MINVAL:
        return 0.0, pnt
    G = math.acos(cosG)
    z = zinit
    f = math.asin(A * z) + math.asin(B * z) - 2 * math.asin(z) + G
    if f > 0:
        return 0.0, pnt
    it = 0
    while it < maxiter and abs(f) > tolerance:
        df = (A / max(MINVAL, math.sqrt(1 - z * z * A * A))
              + B / max(MINVAL, math.sqrt(1 - z * z * B * B))
              - 2 / max(MINVAL, math.sqrt(1 - z * z)))
        if df > -MINVAL:
            return 0.0, pnt
        z1 = z - f / df
        if z1 > z:
            return 0.0, pnt
        z = z1
        f = math.asin(A * z) + math.asin(B * z) - 2 * math.asin(z) + G
        if f > tolerance:
            return 0.0, pnt
        it += 1
    if it >= maxiter:
        return 0.0, pnt
    if end[0] * end[3] - end[1] * end[2] > 0:
        vec = end[0:2]
        ang = math.asin(z) - math.asin(A * z)
    else:
        vec = end[2:4]
        ang = math.asin(z) - math.asin(B * z)
    vec = _normalize2(vec)
    x = radius * (math.cos(ang) * vec[0] - math.sin(ang) * vec[1])
    y = radius * (math.sin(ang) * vec[0] + math.cos(ang) * vec[1])
    return 0.0, np.array([x, y, x, y])


def wrap(x0, x1, xpos, xmat, radius, wtype, side):
    """mju_wrap: (length or -1, two 3D tangent points in the global frame)."""
    p0 = xmat.T @ (x0 - xpos)
    p1 = xmat.T @ (x1 - xpos)
    if _norm(p0) < MINVAL or _norm(p1) < MINVAL:
        return -1.0, None
    if wtype == WRAP_SPHERE:
        ax0 = p0 / _norm(p0)
        normal = np.cross(p0, p1)
        nrm = _norm(normal)
        if nrm < MINVAL:
            i = 0
            if abs(ax0[1]) > abs(ax0[0]) and abs(ax0[1]) > abs(ax0[2]):
                i = 1
            if abs(ax0[2]) > abs(ax0[0]) and abs(ax0[2]) > abs(ax0[1]):
                i = 2
            ax1 = np.ones(3)
            ax1[i] = 0
            normal = np.cross(ax0, ax1)
            normal = normal / max(_norm(normal), MINVAL)
        else:
            normal = normal / nrm
        ax1 = np.cross(normal, ax0)
        ax1 = ax1 / max(_norm(ax1), MINVAL)
    else:
        ax0, ax1 = np.array([1.0, 0, 0]), np.array([0.0, 1, 0])
    d = np.array([p0 @ ax0, p0 @ ax1, p1 @ ax0, p1 @ ax1])
    sd = s = None
    if side is not None:
        s = xmat.T @ (side - xpos)
        sd = _normalize2(np.array([s @ ax0, s @ ax1])) * radius
    if side is not None and _norm(s) < radius:
        wlen, pnt = _wrap_inside(d, radius)
    else:
        wlen, pnt = _wrap_circle(d, sd, radius)
    if wlen < 0:
        return -1.0, None
    res = [ax0 * pnt[0] + ax1 * pnt[1], ax0 * pnt[2] + ax1 * pnt[3]]
    if wtype == WRAP_CYLINDER:
        L0 = math.hypot(p0[0] - res[0][0], p0[1] - res[0][1])
        L1 = math.hypot(p1[0] - res[1][0], p1[1] - res[1][1])
        res[0][2] = p0[2] + (p1[2] - p0[2]) * L0 / (L0 + wlen + L1)
        res[1][2] = p0[2] + (p1[2] - p0[2]) * (L0 + wlen) / (L0 + wlen + L1)
        height = abs(res[1][2] - res[0][2])
        wlen = math.sqrt(wlen * wlen + height * height)
    return wlen, (xmat @ res[0] + xpos, xmat @ res[1] + xpos)


def _point_jac(k: HostKinematics, point, body, site, cache: dict):
    """The translational Jacobian of a point on ``body``; a site's is made once."""
    if site is None:
        return k.jac_pos(point, body)
    jp = cache.get(site)
    if jp is None:
        jp = cache[site] = k.jac_pos(point, body)
    return jp


def tendon_kinematics(a, k: HostKinematics):
    """mj_tendon: lengths (ntendon) and dense Jacobians (ntendon x nv)."""
    nten = len(a.tendon_adr)
    nv = len(a.dof_bodyid)
    L = np.zeros(nten)
    J = np.zeros((nten, nv))
    # ids and parameters as Python numbers (the same values; numpy scalars are slow)
    wrap_type, wrap_objid = a.wrap_type.tolist(), a.wrap_objid.tolist()
    wrap_prm, site_bodyid = a.wrap_prm.tolist(), a.site_bodyid.tolist()
    qposadr, dofadr = a.jnt_qposadr.tolist(), a.jnt_dofadr.tolist()
    site_jacs = {}  # site id -> its translational Jacobian (sites recur across tendons)
    for i, (adr, num) in enumerate(zip(a.tendon_adr.tolist(), a.tendon_num.tolist())):
        wt, wo, wp = wrap_type[adr:adr + num], wrap_objid[adr:adr + num], \
            wrap_prm[adr:adr + num]
        if wt[0] == WRAP_JOINT:
            for j in range(num):
                jid = wo[j]
                L[i] += wp[j] * k.qpos[qposadr[jid]]
                J[i, dofadr[jid]] += wp[j]
            continue
        divisor = 1.0
        j = 0
        while j < num - 1:
            t0, t1 = wt[j], wt[j + 1]
            id0, id1 = wo[j], wo[j + 1]
            if t0 == WRAP_PULLEY or t1 == WRAP_PULLEY:
                if t0 == WRAP_PULLEY:
                    divisor = wp[j]
                j += 1
                continue
            p0 = k.site_xpos[id0]
            wlen = -1.0
            wraptype = WRAP_NONE
            if t1 in (WRAP_SPHERE, WRAP_CYLINDER):
                wraptype, wrapid = t1, id1
                id1 = wo[j + 2]
                sideid = int(round(wp[j + 1]))
                wlen, tang = wrap(p0, k.site_xpos[id1], k.geom_xpos[wrapid],
                                  k.geom_xmat[wrapid], a.geom_size[wrapid][0], wraptype,
                                  k.site_xpos[sideid] if sideid >= 0 else None)
            if wlen < 0:
                pts = [p0, k.site_xpos[id1]]
                bodies = [site_bodyid[id0], site_bodyid[id1]]
                sites = [id0, id1]
                L[i] += _norm(pts[1] - pts[0]) / divisor
            else:
                pts = [p0, tang[0], tang[1], k.site_xpos[id1]]
                gb = int(a.geom_bodyid[wrapid])
                bodies = [site_bodyid[id0], gb, gb, site_bodyid[id1]]
                sites = [id0, None, None, id1]
                L[i] += (_norm(pts[1] - pts[0]) + wlen
                         + _norm(pts[3] - pts[2])) / divisor
            for s in range(len(pts) - 1):
                if bodies[s] != bodies[s + 1]:
                    dif = pts[s + 1] - pts[s]
                    n = _norm(dif)
                    dif = dif / n if n >= MINVAL else np.array([1.0, 0, 0])
                    j1 = _point_jac(k, pts[s], bodies[s], sites[s], site_jacs)
                    j2 = _point_jac(k, pts[s + 1], bodies[s + 1], sites[s + 1], site_jacs)
                    J[i] += (dif @ (j2 - j1)) / divisor
            j += 2 if wraptype != WRAP_NONE else 1
    return L, J


# ------------------------------------------------------------------------------------
# compiling <tendon>
# ------------------------------------------------------------------------------------

@dataclass
class Tendon:
    el: object
    name: str
    id: int = 0
    group: int = 0
    limited: int = LIMITED_AUTO
    actfrclimited: int = LIMITED_AUTO
    range: np.ndarray = field(default_factory=lambda: np.zeros(2))
    actfrcrange: np.ndarray = field(default_factory=lambda: np.zeros(2))
    solref_lim: np.ndarray = field(default_factory=lambda: np.array(SOLREF0))
    solimp_lim: np.ndarray = field(default_factory=lambda: np.array(SOLIMP0))
    solref_fri: np.ndarray = field(default_factory=lambda: np.array(SOLREF0))
    solimp_fri: np.ndarray = field(default_factory=lambda: np.array(SOLIMP0))
    frictionloss: float = 0.0
    springlength: np.ndarray = field(default_factory=lambda: np.array([-1.0, -1.0]))
    width: float = 0.003
    material: Optional[str] = None
    matid: int = -1
    margin: float = 0.0
    stiffness: float = 0.0
    damping: float = 0.0
    armature: float = 0.0
    rgba: np.ndarray = field(default_factory=lambda: np.array([0.5, 0.5, 0.5, 1.0]))
    user: np.ndarray = field(default_factory=lambda: np.zeros(0))
    path: list = field(default_factory=list)  # (type, objid, prm, el)
    is_limited: bool = False
    is_actfrclimited: bool = False
    spatial: bool = False


def _limited_auto(a: Attrs, ctx, limited, rng, attr, flag):
    if limited == LIMITED_AUTO and not ctx.autolimits and not (rng[0] == 0 and rng[1] == 0):
        raise a.error(f"tendon has `{attr}` but not `{flag}`; set the autolimits=\"true\" "
                      f"compiler option, specify `{flag}` explicitly (\"true\" or "
                      f"\"false\"), or remove the `{attr}` attribute", attr)
    return limited == LIMITED_TRUE or (limited == LIMITED_AUTO and rng[0] < rng[1])


def compile_tendons(spec, defaults, builder, ctx, assets, nuser_tendon):
    """Parse and check every tendon; returns the list of Tendon objects."""
    bodies = builder.bodies
    joints = {j.name: j for b in bodies for j in b.joints if j.name}
    sites = {s.name: s for b in bodies for s in b.sites if s.name}
    geoms = {g.name: g for b in bodies for g in b.geoms if g.name}
    tendons = []
    for section in spec.sections("tendon"):
        for el in section.children:
            cls = el.attr("class") or "main"
            a = Attrs(el, defaults.get(cls, "tendon", el))
            t = Tendon(el=el, name=el.attr("name") or "", id=len(tendons))
            t.group = a.int("group", 0)
            t.material = a.str("material")
            t.limited = a.keyword("limited", LIMITED, LIMITED_AUTO)
            # mjs_defaultTendon leaves actfrclimited at 0 (false), unlike limited (auto)
            t.actfrclimited = a.keyword("actuatorfrclimited", LIMITED, LIMITED_FALSE)
            t.width = a.float("width", 0.003)
            t.solref_lim = a.floats("solreflimit", 2, SOLREF0, exact=False)
            t.solimp_lim = a.floats("solimplimit", 5, SOLIMP0, exact=False)
            t.solref_fri = a.floats("solreffriction", 2, SOLREF0, exact=False)
            t.solimp_fri = a.floats("solimpfriction", 5, SOLIMP0, exact=False)
            t.range = a.floats("range", 2, (0, 0))
            t.actfrcrange = a.floats("actuatorfrcrange", 2, (0, 0))
            t.margin = a.float("margin", 0.0)
            t.stiffness = a.float("stiffness", 0.0)
            t.damping = a.float("damping", 0.0)
            t.armature = a.float("armature", 0.0)
            t.frictionloss = a.float("frictionloss", 0.0)
            sl = a.floats("springlength", 2, (-1, -1), exact=False)
            text = a.text("springlength")
            if text is not None and len(text.replace(",", " ").split()) == 1:
                sl[1] = sl[0]
            t.springlength = sl
            t.rgba = a.floats("rgba", 4, (0.5, 0.5, 0.5, 1.0))
            user = a.floats("user", finite=False)
            t.user = np.zeros(0) if user is None else user
            if len(t.user) > nuser_tendon >= 0:
                raise a.error("user has more values than nuser_tendon in tendon", "user")
            _tendon_path(t, el, joints, sites, geoms, ctx)
            _check_tendon(t, a, element_ctx(el, ctx))
            t.matid = assets.material_id(t.material, el) if t.material else -1
            tendons.append(t)
    return tendons


def _tendon_path(t, el, joints, sites, geoms, ctx=None):
    for sub in el.children:
        sa = Attrs(sub)
        if sub.tag == "site":
            name = sa.str("site")
            if name is None:
                raise sa.error("required attribute missing", "site")
            if name not in sites:
                raise sa.error(f"site '{name}' not found in tendon", "site")
            t.path.append([WRAP_SITE, sites[name].id, 0.0, sub])
        elif sub.tag == "geom":
            name = sa.str("geom")
            if name is None:
                raise sa.error("required attribute missing", "geom")
            if name not in geoms:
                if ctx is not None and ctx.discardvisual:
                    # MuJoCo keeps wrapping geoms (marks them non-visual) under discardvisual
                    raise NotImplementedError(
                        f"{sub.xml_file or '<string>'}:{sub.xml_line}: <spatial><geom> "
                        f"wrapping a geom removed by discardvisual is not supported yet")
                raise sa.error(f"geom '{name}' not found in tendon", "geom")
            g = geoms[name]
            if g.type == GEOM_CYLINDER:
                wtype = WRAP_CYLINDER
            elif g.type == GEOM_SPHERE:
                wtype = WRAP_SPHERE
            else:
                raise sa.error(f"geom '{name}' in tendon is not sphere or cylinder", "geom")
            side = sa.str("sidesite")
            sideid = -1
            if side:
                if side not in sites:
                    raise sa.error(f"side site '{side}' not found in tendon", "sidesite")
                sideid = sites[side].id
            t.path.append([wtype, g.id, float(sideid), sub])
        elif sub.tag == "pulley":
            div = sa.float("divisor")
            if div is None:
                raise sa.error("required attribute missing", "divisor")
            if div < 0:
                raise sa.error("pulley has negative divisor", "divisor")
            t.path.append([WRAP_PULLEY, -1, div, sub])
        elif sub.tag == "joint":
            name = sa.str("joint")
            if name is None:
                raise sa.error("required attribute missing", "joint")
            coef = sa.float("coef")
            if coef is None:
                raise sa.error("required attribute missing", "coef")
            if name not in joints:
                raise sa.error(f"joint '{name}' not found in tendon", "joint")
            t.path.append([WRAP_JOINT, joints[name].id, coef, sub])


def _check_tendon(t, a, ctx):
    path = t.path
    sz = len(path)
    label = f"tendon '{t.name}' (id = {t.id})"
    if not sz:
        raise a.error(f"{label}: path cannot be empty")
    t.spatial = path[0][0] != WRAP_JOINT
    if t.spatial and sz < 2:
        raise a.error(f"{label}: spatial path must contain at least two objects")
    if t.spatial and t.width <= 0:
        raise a.error(f"{label} must have positive width", "width")
    for i, (wt, oid, _, sub) in enumerate(path):
        if not t.spatial:
            if wt != WRAP_JOINT:
                raise error_at(sub, f"{label}: spatial object found in fixed path at pos {i}")
            continue
        if t.armature < 0:
            raise a.error(f"{label}: tendon armature cannot be negative", "armature")
        if wt == WRAP_PULLEY:
            if i > 0 and path[i - 1][0] == WRAP_PULLEY:
                raise error_at(sub, f"{label}: consecutive pulleys (pos {i})")
            if i == sz - 1:
                raise error_at(sub, f"{label}: path ends with pulley")
        elif wt == WRAP_SITE:
            if (i == 0 or path[i - 1][0] == WRAP_PULLEY) and \
                    (i == sz - 1 or path[i + 1][0] == WRAP_PULLEY):
                raise error_at(sub, f"{label}: site {i} needs a neighbor that is not a "
                                    f"pulley")
            if i < sz - 1 and path[i + 1][0] == WRAP_SITE and path[i + 1][1] == oid:
                raise error_at(sub, f"{label}: site {i} is repeated")
        elif wt in (WRAP_SPHERE, WRAP_CYLINDER):
            if i == 0 or i == sz - 1 or path[i - 1][0] != WRAP_SITE or \
                    path[i + 1][0] != WRAP_SITE:
                raise error_at(sub, f"{label}: geom at pos {i} not bracketed by sites")
            if t.armature > 0:
                raise a.error(f"{label}: geom wrapping not supported by tendon armature",
                              "armature")
        elif wt == WRAP_JOINT:
            raise error_at(sub, f"{label}: joint wrap found in spatial path at pos {i}")
    t.is_limited = _limited_auto(a, ctx, t.limited, t.range, "range", "limited")
    if t.is_limited and t.range[0] >= t.range[1]:
        raise a.error("invalid limits in tendon", "range")
    t.is_actfrclimited = _limited_auto(a, ctx, t.actfrclimited, t.actfrcrange,
                                       "actuatorfrcrange", "actuatorfrclimited")
    if t.is_actfrclimited and (t.actfrcrange[0] >= t.actfrcrange[1]
                               or t.actfrcrange[0] > 0 or t.actfrcrange[1] < 0):
        raise a.error("invalid actuatorfrcrange in tendon", "actuatorfrcrange")
    if t.springlength[0] > t.springlength[1]:
        raise a.error("invalid springlength in tendon", "springlength")


def fill_tendons(out, tendons, nuser):
    """The tendon_* and wrap_* arrays (constants from qpos0 are set later)."""
    if not tendons:
        def make(ns):
            _fill_tendon_arrays(ns, [], nuser)
            ns.tendon_treenum = np.zeros(0, dtype=np.int32)
            ns.tendon_treeid = np.full((0, 2), -1, dtype=np.int32)
        replay_empty(out, ("tendons", nuser), make)
        return
    _fill_tendon_arrays(out, tendons, nuser)
    _tendon_trees(out, tendons)


def _fill_tendon_arrays(out, tendons, nuser):
    f = np.float64
    n = len(tendons)
    adr, wraps = [], []
    for t in tendons:
        adr.append(len(wraps))
        wraps.extend(t.path)
    out.tendon_adr = np.array(adr, dtype=np.int32)
    out.tendon_num = np.array([len(t.path) for t in tendons], dtype=np.int32)
    out.tendon_matid = np.array([t.matid for t in tendons], dtype=np.int32)
    out.tendon_group = np.array([t.group for t in tendons], dtype=np.int32)
    out.tendon_limited = np.array([t.is_limited for t in tendons], dtype=np.int32)
    out.tendon_actfrclimited = np.array([t.is_actfrclimited for t in tendons], dtype=np.int32)
    out.tendon_width = np.array([t.width for t in tendons], dtype=f)
    for k, m in (("solref_lim", 2), ("solimp_lim", 5), ("solref_fri", 2), ("solimp_fri", 5),
                 ("range", 2), ("actfrcrange", 2), ("rgba", 4)):
        setattr(out, "tendon_" + k, np.array([getattr(t, k) for t in tendons],
                                             dtype=f).reshape(n, m))
    for k in ("margin", "stiffness", "damping", "armature", "frictionloss"):
        setattr(out, "tendon_" + k, np.array([getattr(t, k) for t in tendons], dtype=f))
    out.tendon_lengthspring = np.array([t.springlength for t in tendons], dtype=f).reshape(n, 2)
    user = np.zeros((n, nuser))
    for i, t in enumerate(tendons):
        user[i, :len(t.user)] = t.user
    out.tendon_user = user
    out.wrap_type = np.array([w[0] for w in wraps], dtype=np.int32)
    out.wrap_objid = np.array([w[1] for w in wraps], dtype=np.int32)
    out.wrap_prm = np.array([w[2] for w in wraps], dtype=f)


def _tendon_trees(out, tendons):
    """tendon_treenum/treeid (setFixed), and the bodies that tendon armature makes
    not simple."""
    n = len(tendons)
    treenum = np.zeros(n, dtype=np.int32)
    treeid = np.full((n, 2), -1, dtype=np.int32)
    for i, t in enumerate(tendons):
        seen = []
        for wt, oid, _, _ in t.path:
            if wt == WRAP_JOINT:
                b = out.jnt_bodyid[oid]
            elif wt == WRAP_SITE:
                b = out.site_bodyid[oid]
            elif wt in (WRAP_SPHERE, WRAP_CYLINDER):
                b = out.geom_bodyid[oid]
            else:
                continue
            tid = out.body_treeid[b]
            if tid != -1 and tid not in seen:
                if len(seen) < 2:
                    treeid[i, len(seen)] = tid
                seen.append(tid)
        treenum[i] = len(seen)
    out.tendon_treenum = treenum
    out.tendon_treeid = treeid
    # FinalizeSimple: bodies touched by tendons with armature are not simple
    if all(t.armature == 0 for t in tendons):
        return
    for t in tendons:
        if t.armature == 0:
            continue
        for wt, oid, _, _ in t.path:
            if wt == WRAP_SITE:
                out.body_simple[out.site_bodyid[oid]] = 0
            elif wt in (WRAP_SPHERE, WRAP_CYLINDER):
                out.body_simple[out.geom_bodyid[oid]] = 0
    count = 0
    for i in range(len(out.dof_bodyid) - 1, -1, -1):
        count = count + 1 if out.body_simple[out.dof_bodyid[i]] else 0
        out.dof_simplenum[i] = count
