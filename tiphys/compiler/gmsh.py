"""GMSH meshes for ``<flexcomp type="gmsh">`` (MuJoCo 3.4.0's LoadGMSH).

Formats 4.1 (ASCII and binary) and 2.2 (ASCII), with MuJoCo's restrictions: one
node block with sequential tags, one element block of lines (4.1 only), triangles or
tetrahedra. The binary 2.2 layout (MuJoCo reads two writers' variants) is not read:
it raises NotImplementedError.
"""
from __future__ import annotations

import struct


class GmshError(Exception):
    """A bad GMSH file: the message is MuJoCo's."""


def _section(buf: bytes, name: str):
    begin = buf.find(b"$" + name.encode())
    end = buf.find(b"$End" + name.encode())
    if begin < 0:
        raise GmshError(f"GMSH file missing ${name}")
    begin += len(name) + 2  # "$Name" and the line feed
    if end < begin:
        raise GmshError(f"GMSH file missing $End{name} after ${name}")
    return begin, end


class _Tokens:
    def __init__(self, text: bytes, what: str):
        self.tok = text.split()
        self.i = 0
        self.what = what

    def next(self, conv, what=None):
        # (MuJoCo's stream must still be good after a read: a value needs text after it)
        if self.i >= len(self.tok) - 0:
            raise GmshError(what or self.what)
        try:
            value = conv(self.tok[self.i])
        except ValueError:
            raise GmshError(what or self.what) from None
        self.i += 1
        return value


def load_gmsh(data: bytes):
    """(dim, points (flat list), elements (flat list of 0-based vertex ids))."""
    if not data:
        raise GmshError("Empty GMSH file")
    if not data.startswith(b"$MeshFormat"):
        raise GmshError("GMSH file must begin with $MeshFormat")
    head = data[11:64].split()
    try:
        version, binary = float(head[0]), int(head[1])
    except (IndexError, ValueError):
        raise GmshError("Could not read GMSH file header") from None
    v = round(100 * version)
    if v not in (220, 410):
        raise GmshError("Only GMSH file format versions 4.1 and 2.2 are supported")
    nb, ne = _section(data, "Nodes")
    eb, ee = _section(data, "Elements")
    if v == 410:
        return _load41(data, binary, nb, ne, eb, ee)
    if binary:
        raise NotImplementedError("binary GMSH 2.2 files are not supported yet")
    return _load22(data, nb, ne, eb, ee)


def _load41(data, binary, nb, ne, eb, ee):
    if binary:
        if ne - nb < 52:
            raise GmshError("Invalid nodes header")
        nblocks, nnodes, mintag, maxtag = struct.unpack_from("<4Q", data, nb)
        edim, _, _, ninblock = struct.unpack_from("<3iQ", data, nb + 32)
        if nblocks != 1 or nnodes != ninblock:
            raise GmshError("All nodes must be in single block")
        if edim < 1 or edim > 3:
            raise GmshError("Entity must be 1D, 2D or 3D")
        if ne - nb < 52 + nnodes * 32:
            raise GmshError("Insufficient byte size of Nodes")
        tags = struct.unpack_from(f"<{nnodes}Q", data, nb + 52)
        if any(t != i + mintag for i, t in enumerate(tags)):
            raise GmshError("Node tags must be sequential")
        point = list(struct.unpack_from(f"<{3 * nnodes}d", data, nb + 52 + 8 * nnodes))
        if ee - eb < 52:
            raise GmshError("Invalid elements header")
        nblocks, nelem, _, _ = struct.unpack_from("<4Q", data, eb)
        edim2, _, etype, ninblock = struct.unpack_from("<3iQ", data, eb + 32)
        _check_elements(nblocks, nelem, ninblock, edim, edim2, etype)
        if ee - eb < 52 + nelem * (edim + 2) * 8:
            raise GmshError("Insufficient byte size of Elements")
        element = []
        off = eb + 52
        for _ in range(nelem):
            ids = struct.unpack_from(f"<{edim + 2}Q", data, off)
            element += [int(x) - mintag for x in ids[1:]]
            off += 8 * (edim + 2)
        return edim, point, element
    ss = _Tokens(data[nb:ne], "Error reading Nodes header")
    nblocks, nnodes, mintag, maxtag = (ss.next(int) for _ in range(4))
    edim, _, _, ninblock = (ss.next(int) for _ in range(4))
    if nblocks != 1 or nnodes != ninblock:
        raise GmshError("All nodes must be in single block")
    if maxtag != ninblock:
        raise GmshError("Maximum number of nodes must be equal to number of nodes in a block")
    if edim < 1 or edim > 3:
        raise GmshError("Entity must be 1D, 2D or 3D")
    for i in range(nnodes):
        if ss.next(int, "Error reading node tags") != i + mintag:
            raise GmshError("Node tags must be sequential")
    point = [ss.next(float, "Error reading node coordinates") for _ in range(3 * nnodes)]
    ss = _Tokens(data[eb:ee], "Error reading Elements header")
    nblocks, nelem, _, _ = (ss.next(int) for _ in range(4))
    edim2, _, etype, ninblock = (ss.next(int) for _ in range(4))
    _check_elements(nblocks, nelem, ninblock, edim, edim2, etype)
    element = []
    for _ in range(nelem):
        ss.next(int, "Error reading Elements")
        element += [ss.next(int, "Error reading Elements") - mintag for _ in range(edim + 1)]
    return edim, point, element


def _check_elements(nblocks, nelem, ninblock, edim, edim2, etype):
    if nblocks != 1 or nelem != ninblock:
        raise GmshError("All elements must be in single block")
    if edim2 != edim:
        raise GmshError("Inconsistent dimensionality in Elements")
    if (edim, etype) not in ((1, 1), (2, 2), (3, 4)):
        raise GmshError("Element type inconsistent with dimensionality")


def _load22(data, nb, ne, eb, ee):
    text = data[nb:ne]
    first = text.split(b"\n", 1)[0].rstrip(b"\r")
    if not first.isdigit():
        raise GmshError("Invalid node header")
    ss = _Tokens(text, "Error reading Nodes header")
    nnodes = ss.next(int)
    point = []
    for _ in range(nnodes):
        ss.next(int, "Error reading node tags")
        point += [ss.next(float, "Error reading node coordinates") for _ in range(3)]
    text = data[eb:ee]
    first = text.split(b"\n", 1)[0].rstrip(b"\r")
    if not first.isdigit():
        raise GmshError("Invalid elements header")
    ss = _Tokens(text, "Error reading Elements header")
    nelem = ss.next(int)
    element = []
    dim = 0
    for i in range(nelem):
        ss.next(int, "Error reading Elements")
        etype = ss.next(int, "Error reading Elements")
        ntags = ss.next(int, "Error reading Elements")
        if i == 0:
            dim, nnt = {2: (2, 3), 4: (3, 4)}.get(etype, (0, 0))
            if not nnt:
                raise GmshError("Invalid number of node tags")
        if ntags > 0:
            ss.next(int, "Error reading Elements")
            ss.next(int, "Error reading Elements")
        for _ in range(nnt):
            tag = ss.next(int, "Error reading Elements")
            if tag > nnodes or tag < 1:
                raise GmshError("Invalid node tag")
            element.append(tag - 1)
    return dim, point, element
