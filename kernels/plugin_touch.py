"""The touch-grid sensor plugin's kernel (MuJoCo's plugin/sensor/touch_grid.cc,
mujoco.sensor.touch_grid), batched over worlds and contacts.

A touch grid looks down its site's -z axis (the camera convention) and bins, over a
field of view, the force:torque of every contact that touches the site's weld body,
in the site frame and in the contact frame's order (normal, tangent, tangent; then
torsional, rolling, rolling): the first ``nchannel`` of those 6 components make
``nchannel`` images of ``size[0]`` x ``size[1]`` bins, stored channel by channel,
row (elevation bin) by row. A contact's bin comes from its point in the site frame in
spherical coordinates: azimuth atan2(x, -z) against the horizontal bin edges,
elevation atan2(y, hypot(x, z)) against the vertical ones; a value on an edge belongs
to the bin below it, and points outside the field of view are dropped. The edges are
evenly spaced in [-1, 1], bent by the fovea (gamma x^5 + (1 - gamma) x) and scaled by
the field of view; the host (tiphys/plugin/touch_grid.py) makes them with MuJoCo's
arithmetic. The force's sign is the contact's unless the site's weld body has a smaller
id than the larger of the contact's two (geom) bodies.

One launch: the grids are zeroed, then a thread per (world, contact slot) adds its
contact to every grid it touches (atomic adds: the order of the sum is not MuJoCo's
contact order, equal up to round-off). Per grid the plan gives ``tg_int`` (TG_*
columns) and ``tg_edges`` (the horizontal then the vertical edges, from TG_EDGEADR);
``tg_zero`` lists the sensordata entries of every grid.

Differences from MuJoCo: contacts of flex elements or vertices (geom -1) are not
binned (MuJoCo reads geom_bodyid[-1] for them); the per-bin mean distances that
MuJoCo keeps for its visualisation only are not computed.
"""
import taichi as ti

from .math import mul_mat_t
from .rne_post import contact_force_local

ND = ti.types.ndarray()

# tg_int columns
TG_ADR = 0  # sensordata address of the grid
TG_SITE = 1  # the sensor's site
TG_WELD = 2  # weld body of the site's body (MuJoCo's "parent body")
TG_NCHANNEL = 3  # images (1 to 6)
TG_NX = 4  # horizontal bins
TG_NY = 5  # vertical bins
TG_EDGEADR = 6  # first horizontal edge in tg_edges (nx + 1, then ny + 1 vertical ones)
TG_WIDTH = 7


@ti.func
def _lower_bound(tg_edges: ti.template(), start, n, x):
    """Index of the first of the n edges at tg_edges[start:] that x is at most; n when
    none (NaN included)."""
    lo = 0
    hi = n
    while lo < hi:
        mid = (lo + hi) // 2
        if x <= tg_edges[start + mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@ti.kernel
def touch_grid_compute(
    # model
    geom_bodyid: ND, body_weldid: ND,
    # plugin plan
    tg_int: ND, tg_edges: ND, tg_zero: ND, ntouch: ti.i32, nzero: ti.i32,
    # data in
    site_xpos: ND, site_xmat: ND, ncon: ND, contact_pos: ND, contact_frame: ND,
    contact_friction: ND, contact_dim: ND, contact_geom: ND, contact_efc_address: ND,
    efc_force: ND,
    # data out
    sensordata: ND,
    # compile-time: pyramidal friction cones
    pyramidal: ti.template(),
):
    """TouchGrid::Compute for every grid of every world."""
    nworld = sensordata.shape[0]
    for worldid, k in ti.ndrange(nworld, nzero):
        sensordata[worldid, tg_zero[k]] = 0.0
    for worldid, conid in ti.ndrange(nworld, contact_geom.shape[1]):
        if conid < ncon[worldid]:
            geoms = contact_geom[worldid, conid]
            g1 = geoms[0]
            g2 = geoms[1]
            if g1 >= 0 and g2 >= 0:
                body1 = geom_bodyid[g1]
                body2 = geom_bodyid[g2]
                weld1 = body_weldid[body1]
                weld2 = body_weldid[body2]
                for t in range(ntouch):
                    weld = tg_int[t, TG_WELD]
                    if weld1 == weld or weld2 == weld:
                        _add_contact(worldid, conid, t, body1, body2, pyramidal, tg_int,
                                     tg_edges, site_xpos, site_xmat, ncon, contact_pos,
                                     contact_frame, contact_friction, contact_dim,
                                     contact_efc_address, efc_force, sensordata)


@ti.func
def _add_contact(worldid, conid, t, body1, body2, pyramidal: ti.template(),
                 tg_int: ti.template(), tg_edges: ti.template(), site_xpos: ti.template(),
                 site_xmat: ti.template(), ncon: ti.template(), contact_pos: ti.template(),
                 contact_frame: ti.template(), contact_friction: ti.template(),
                 contact_dim: ti.template(), contact_efc_address: ti.template(),
                 efc_force: ti.template(), sensordata: ti.template()):
    """One contact's force:torque into grid t's bin of its direction."""
    siteid = tg_int[t, TG_SITE]
    site_mat = site_xmat[worldid, siteid]
    rel = mul_mat_t(site_mat, contact_pos[worldid, conid] - site_xpos[worldid, siteid])
    azimuth = ti.atan2(rel[0], -rel[2])
    elevation = ti.atan2(rel[1], ti.sqrt(rel[0] * rel[0] + rel[2] * rel[2]))
    nx = tg_int[t, TG_NX]
    ny = tg_int[t, TG_NY]
    edgeadr = tg_int[t, TG_EDGEADR]
    xbin = _lower_bound(tg_edges, edgeadr, nx + 1, azimuth)
    ybin = _lower_bound(tg_edges, edgeadr + nx + 1, ny + 1, elevation)
    if xbin != 0 and xbin != nx + 1 and ybin != 0 and ybin != ny + 1:
        lfrc = contact_force_local(worldid, conid, pyramidal, ncon, contact_dim,
                                   contact_friction, contact_efc_address, efc_force)
        frame = contact_frame[worldid, conid]
        force = mul_mat_t(site_mat, mul_mat_t(frame, ti.Vector([lfrc[0], lfrc[1], lfrc[2]])))
        torque = mul_mat_t(site_mat, mul_mat_t(frame, ti.Vector([lfrc[3], lfrc[4], lfrc[5]])))
        sign = 1.0
        if tg_int[t, TG_WELD] < ti.max(body1, body2):
            sign = -1.0
        # (z, x, y): normal first, as in the contact frame
        values = ti.Vector([force[2], force[0], force[1], torque[2], torque[0], torque[1]])
        frame_size = nx * ny
        adr = tg_int[t, TG_ADR] + (ybin - 1) * nx + (xbin - 1)
        nchannel = tg_int[t, TG_NCHANNEL]
        for c in ti.static(range(6)):
            if c < nchannel:
                ti.atomic_add(sensordata[worldid, adr + c * frame_size], sign * values[c])
