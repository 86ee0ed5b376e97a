"""The contact-filter callback's step of the collision stage (MuJoCo's
mjcb_contactfilter in mj_collideGeoms, src/engine/engine_collision_driver.c).

kernels/collision_driver.py plans the pairs the filter sees (``plan.filter_geom``) and
each candidate's column among them (``plan.filter_index``); here the callback
(kernels/callbacks.py) flags the pairs to discard per world, and one launch rebuilds
every world's detector lists from the shared ones without them, in candidate order,
so that the narrowphase and the contact order are those of the unfiltered pairs.
"""
import taichi as ti

from . import callbacks
from .bind import launch
from .math import param_row

ND = ti.types.ndarray()


@ti.kernel
def _filter_lists(static_lists: ND, static_counts: ND, filter_index: ND, discard: ND,
                  filter_lists: ND, filter_counts: ND):
    """Each world's detector lists: the shared lists without the candidates the
    contact filter discards in that world (candidate order kept)."""
    for worldid, kind in ti.ndrange(filter_lists.shape[0], filter_lists.shape[1]):
        n = 0
        for k in range(static_counts[0, kind]):
            cand = static_lists[0, kind, k]
            col = filter_index[cand]
            keep = True
            if col >= 0:
                keep = discard[param_row(worldid, discard), col] == 0
            if keep:
                filter_lists[worldid, kind, n] = cand
                n += 1
        filter_counts[worldid, kind] = n


def contact_filter(m, d, plan, flt) -> None:
    """Call the contact-filter callback on the plan's filterable pairs of every world
    and rebuild the worlds' detector lists without the pairs it discards.

    Reads the collision plan's shared lists; writes ``flt.lists`` and ``flt.counts``
    (the per-Data arrays of collision_driver._filter_state) that the narrowphase
    reads."""
    discard = callbacks.values("contactfilter", m, d, plan.filter_geom, ti.i32)
    launch(_filter_lists, m, d, static_lists=plan.static_lists,
           static_counts=plan.static_counts, filter_index=flt.index, discard=discard,
           filter_lists=flt.lists, filter_counts=flt.counts)
