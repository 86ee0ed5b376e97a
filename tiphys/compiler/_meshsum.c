/* The ordered single-precision sums of tiphys/compiler/mesh.py (_ordered_accumulate,
 * the reference): acc[idx[k]] += vals[k] for k in order, each addition done in double
 * and rounded to float, as MuJoCo's 'float += double'. The reference does the k-th
 * additions to every row together with numpy, a Python step per level, which costs
 * more than the sums on the many small meshes of a robot. The vertex normals of
 * mesh.py's _make_normals (those sums included) and the merge of a binary STL file's
 * equal vertices (mesh_io.py's _dedup_vertices) are here too, for the same reason.
 * Built by setup.py; without it mesh.py and mesh_io.py use numpy.
 *
 * Only the stable C API is used (Py_LIMITED_API is set by setup.py where the buffer
 * protocol belongs to it, Python 3.11 on). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#if defined(_MSC_VER)
#pragma fp_contract(off)
#elif defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "double arithmetic with excess precision would not match numpy's"
#endif

static int is_format(const char *format, char code) {
    return format && ((format[0] == code && !format[1]) ||
                      ((format[0] == '@' || format[0] == '=') && format[1] == code &&
                       !format[2]));
}

static int is_int64(const char *format) {
    return is_format(format, 'q') || (sizeof(long) == 8 && is_format(format, 'l'));
}

PyDoc_STRVAR(accumulate_doc,
"accumulate(acc, idx, vals)\n\n"
"acc: float32 (nrow, k), writable; idx: int64 (n,); vals: float64 (n, k); all\n"
"C-contiguous. acc[idx[j]] += vals[j] for j in order, in double rounded to float,\n"
"in place; IndexError for an idx outside [0, nrow).");

static PyObject *accumulate(PyObject *self, PyObject *args) {
    PyObject *aobj, *iobj, *vobj, *result = NULL;
    Py_buffer acc, idx, vals;
    Py_ssize_t nrow, k, n, j, c, row;
    float *a;
    const int64_t *ix;
    const double *v;
    int bad = 0;
    (void)self;

    if (!PyArg_ParseTuple(args, "OOO", &aobj, &iobj, &vobj)) return NULL;
    if (PyObject_GetBuffer(aobj, &acc, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | PyBUF_WRITABLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(iobj, &idx, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&acc);
        return NULL;
    }
    if (PyObject_GetBuffer(vobj, &vals, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&acc);
        PyBuffer_Release(&idx);
        return NULL;
    }
    if (acc.ndim != 2 || acc.itemsize != 4 || !is_format(acc.format, 'f') || idx.ndim != 1 ||
        idx.itemsize != 8 || !is_int64(idx.format) || vals.ndim != 2 || vals.itemsize != 8 ||
        !is_format(vals.format, 'd') || vals.shape[0] != idx.shape[0] ||
        vals.shape[1] != acc.shape[1]) {
        PyErr_SetString(PyExc_ValueError,
                        "accumulate takes float32 (nrow, k), int64 (n,) and float64 (n, k) "
                        "C-contiguous arrays");
        goto done;
    }
    nrow = acc.shape[0];
    k = acc.shape[1];
    n = idx.shape[0];
    a = (float *)acc.buf;
    ix = (const int64_t *)idx.buf;
    v = (const double *)vals.buf;
    Py_BEGIN_ALLOW_THREADS
    for (j = 0; j < n; j++) {
        row = (Py_ssize_t)ix[j];
        if (row < 0 || row >= nrow) {
            bad = 1;
            break;
        }
        for (c = 0; c < k; c++) a[row * k + c] = (float)((double)a[row * k + c] + v[j * k + c]);
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_Format(PyExc_IndexError, "index %lld is out of bounds for %zd rows",
                     (long long)ix[j], nrow);
        goto done;
    }
    Py_INCREF(Py_None);
    result = Py_None;

done:
    PyBuffer_Release(&acc);
    PyBuffer_Release(&idx);
    PyBuffer_Release(&vals);
    return result;
}

/* ------------------------------------------------------------------------------------
 * vertex normals: mesh.py's _make_normals (the reference) in one pass per stage */

static int get_buffer(PyObject *obj, Py_buffer *view, int writable) {
    return PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT |
                                             (writable ? PyBUF_WRITABLE : 0));
}

/* the face normal of face f (cross product of its edges from corner 0) and its area
 * weight, with _make_normals's arithmetic: renormalised when its squared length is at
 * least eps and the length is more than eps away from 1; weight 0 below eps */
static void face_normal(const double *v, const int64_t *f, double eps, double *n,
                        double *area) {
    const double *p0 = v + 3 * f[0], *p1 = v + 3 * f[1], *p2 = v + 3 * f[2];
    double b0 = p1[0] - p0[0], b1 = p1[1] - p0[1], b2 = p1[2] - p0[2];
    double c0 = p2[0] - p0[0], c1 = p2[1] - p0[1], c2 = p2[2] - p0[2];
    double s, ln;
    n[0] = b1 * c2 - b2 * c1;
    n[1] = b2 * c0 - b0 * c2;
    n[2] = b0 * c1 - b1 * c0;
    s = n[0] * n[0] + n[1] * n[1] + n[2] * n[2];
    ln = sqrt(s);
    if (s >= eps && fabs(ln - 1) > eps) {
        n[0] = n[0] / ln;
        n[1] = n[1] / ln;
        n[2] = n[2] / ln;
    }
    *area = s >= eps ? ln : 0.0;
}

PyDoc_STRVAR(normals_doc,
"normals(vert, face, smooth, eps, minval, out)\n\n"
"vert: float64 (nv, 3); face: int64 (nf, 3), every index in [0, nv); out: float32\n"
"(nv, 3), writable, zeros: the area-weighted vertex normals of mesh.py's\n"
"_make_normals, operation for operation (sharp corners, whose face normal's dot with\n"
"the vertex normal is below 0.8, taken out unless smooth), normalised in float.");

static PyObject *normals(PyObject *self, PyObject *args) {
    PyObject *vobj, *fobj, *oobj, *result = NULL;
    Py_buffer vb, fb, ob;
    int smooth;
    double eps, minval;
    Py_ssize_t nv, nf, i, j, c;
    const double *v;
    const int64_t *f;
    float *out, *rem = NULL;
    int bad = 0;
    (void)self;

    if (!PyArg_ParseTuple(args, "OOpddO", &vobj, &fobj, &smooth, &eps, &minval, &oobj))
        return NULL;
    if (get_buffer(vobj, &vb, 0) < 0) return NULL;
    if (get_buffer(fobj, &fb, 0) < 0) {
        PyBuffer_Release(&vb);
        return NULL;
    }
    if (get_buffer(oobj, &ob, 1) < 0) {
        PyBuffer_Release(&vb);
        PyBuffer_Release(&fb);
        return NULL;
    }
    if (vb.ndim != 2 || vb.shape[1] != 3 || vb.itemsize != 8 || !is_format(vb.format, 'd') ||
        fb.ndim != 2 || fb.shape[1] != 3 || fb.itemsize != 8 || !is_int64(fb.format) ||
        ob.ndim != 2 || ob.shape[1] != 3 || ob.shape[0] != vb.shape[0] || ob.itemsize != 4 ||
        !is_format(ob.format, 'f')) {
        PyErr_SetString(PyExc_ValueError,
                        "normals takes float64 (nv, 3), int64 (nf, 3) and float32 (nv, 3) "
                        "C-contiguous arrays");
        goto done;
    }
    nv = vb.shape[0];
    nf = fb.shape[0];
    v = (const double *)vb.buf;
    f = (const int64_t *)fb.buf;
    out = (float *)ob.buf;
    for (i = 0; i < 3 * nf; i++)
        if (f[i] < 0 || f[i] >= nv) {
            PyErr_SetString(PyExc_IndexError, "face index out of bounds");
            goto done;
        }
    if (!smooth) {
        rem = (float *)PyMem_Calloc(nv > 0 ? (size_t)(3 * nv) : 1, sizeof(float));
        if (!rem) {
            PyErr_NoMemory();
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    /* the sums of the faces' weighted normals, face by face, corner by corner */
    for (i = 0; i < nf; i++) {
        double n[3], area;
        face_normal(v, f + 3 * i, eps, n, &area);
        for (j = 0; j < 3; j++) {
            float *a = out + 3 * f[3 * i + j];
            for (c = 0; c < 3; c++) a[c] = (float)((double)a[c] + n[c] * area);
        }
    }
    if (!smooth) {
        /* the corners whose face turns away from the vertex normal, summed apart */
        for (i = 0; i < nf; i++) {
            double n[3], area;
            face_normal(v, f + 3 * i, eps, n, &area);
            for (j = 0; j < 3; j++) {
                const float *a = out + 3 * f[3 * i + j];
                double vn0 = a[0], vn1 = a[1], vn2 = a[2];
                double s2 = vn0 * vn0 + vn1 * vn1 + vn2 * vn2, l2 = sqrt(s2);
                if (s2 >= eps && fabs(l2 - 1) > eps) {
                    vn0 = vn0 / l2;
                    vn1 = vn1 / l2;
                    vn2 = vn2 / l2;
                }
                if (n[0] * vn0 + n[1] * vn1 + n[2] * vn2 < 0.8) {
                    float *r = rem + 3 * f[3 * i + j];
                    for (c = 0; c < 3; c++) r[c] = (float)((double)r[c] + n[c] * area);
                }
            }
        }
        for (i = 0; i < 3 * nv; i++) out[i] = out[i] - rem[i];
    }
    /* normalised in float; (0, 0, 1) where the length is not above minval */
    for (i = 0; i < nv; i++) {
        float *a = out + 3 * i;
        float l = sqrtf(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]);
        if ((double)l > minval) {
            a[0] = a[0] / l;
            a[1] = a[1] / l;
            a[2] = a[2] / l;
        } else {
            a[0] = 0.0f;
            a[1] = 0.0f;
            a[2] = 1.0f;
        }
    }
    Py_END_ALLOW_THREADS
    (void)bad;
    Py_INCREF(Py_None);
    result = Py_None;

done:
    PyMem_Free(rem);
    PyBuffer_Release(&vb);
    PyBuffer_Release(&fb);
    PyBuffer_Release(&ob);
    return result;
}

/* ------------------------------------------------------------------------------------
 * binary STL vertices merged: mesh_io.py's _dedup_vertices (the reference) with a hash
 * table instead of a sort */

static uint64_t row_hash(const uint32_t *w) {
    uint64_t h = ((uint64_t)w[0] << 32 | w[1]) ^ ((uint64_t)w[2] * 0x9E3779B97F4A7C15ULL);
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 32;
    return h;
}

PyDoc_STRVAR(dedup_doc,
"dedup(vert, first, remap) -> m\n\n"
"vert: float32 (n, 3), finite; first, remap: int64 (n,), writable. The rows equal as\n"
"floats (so -0 == +0) merged: first[:m] the first row of each group in the order the\n"
"groups first appear, remap[k] the group of row k.");

static PyObject *dedup(PyObject *self, PyObject *args) {
    PyObject *vobj, *fobj, *robj, *result = NULL;
    Py_buffer vb, fb, rb;
    Py_ssize_t n, k, m = 0, size = 1, slot;
    uint32_t *keys = NULL;
    int64_t *table = NULL, *first, *remap;
    const float *v;
    (void)self;

    if (!PyArg_ParseTuple(args, "OOO", &vobj, &fobj, &robj)) return NULL;
    if (get_buffer(vobj, &vb, 0) < 0) return NULL;
    if (get_buffer(fobj, &fb, 1) < 0) {
        PyBuffer_Release(&vb);
        return NULL;
    }
    if (get_buffer(robj, &rb, 1) < 0) {
        PyBuffer_Release(&vb);
        PyBuffer_Release(&fb);
        return NULL;
    }
    if (vb.ndim != 2 || vb.shape[1] != 3 || vb.itemsize != 4 || !is_format(vb.format, 'f') ||
        fb.ndim != 1 || fb.shape[0] != vb.shape[0] || fb.itemsize != 8 || !is_int64(fb.format) ||
        rb.ndim != 1 || rb.shape[0] != vb.shape[0] || rb.itemsize != 8 || !is_int64(rb.format)) {
        PyErr_SetString(PyExc_ValueError,
                        "dedup takes float32 (n, 3) and two int64 (n,) C-contiguous arrays");
        goto done;
    }
    n = vb.shape[0];
    v = (const float *)vb.buf;
    first = (int64_t *)fb.buf;
    remap = (int64_t *)rb.buf;
    while (size < 2 * n) size *= 2;
    keys = (uint32_t *)PyMem_Malloc((size_t)(3 * (n > 0 ? n : 1)) * sizeof(uint32_t));
    table = (int64_t *)PyMem_Malloc((size_t)size * sizeof(int64_t));
    if (!keys || !table) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    for (k = 0; k < size; k++) table[k] = -1;
    for (k = 0; k < 3 * n; k++) {
        float x = v[k] + 0.0f; /* -0 -> +0 */
        memcpy(keys + k, &x, sizeof(float));
    }
    for (k = 0; k < n; k++) {
        const uint32_t *w = keys + 3 * k;
        slot = (Py_ssize_t)(row_hash(w) & (uint64_t)(size - 1));
        for (;;) {
            int64_t g = table[slot];
            if (g < 0) { /* a new group */
                table[slot] = m;
                first[m] = k;
                remap[k] = m++;
                break;
            }
            if (!memcmp(keys + 3 * first[g], w, 3 * sizeof(uint32_t))) {
                remap[k] = g;
                break;
            }
            slot = (slot + 1) & (size - 1);
        }
    }
    Py_END_ALLOW_THREADS
    result = PyLong_FromSsize_t(m);

done:
    PyMem_Free(keys);
    PyMem_Free(table);
    PyBuffer_Release(&vb);
    PyBuffer_Release(&fb);
    PyBuffer_Release(&rb);
    return result;
}

/* ------------------------------------------------------------------------------------
 * per-face area, normal and centre (mesh_math.py's _triangles) and the six sums of the
 * inertia (mesh.py's _inertia_products), the references' arithmetic operation for
 * operation, the sums left to right */

static int check_mesh(Py_buffer *vb, Py_buffer *fb) {
    Py_ssize_t i, nv;
    const int64_t *f;
    if (vb->ndim != 2 || vb->shape[1] != 3 || vb->itemsize != 8 || !is_format(vb->format, 'd') ||
        fb->ndim != 2 || fb->shape[1] != 3 || fb->itemsize != 8 || !is_int64(fb->format)) {
        PyErr_SetString(PyExc_ValueError,
                        "takes float64 (nv, 3) and int64 (nf, 3) C-contiguous arrays");
        return -1;
    }
    nv = vb->shape[0];
    f = (const int64_t *)fb->buf;
    for (i = 0; i < 3 * fb->shape[0]; i++)
        if (f[i] < 0 || f[i] >= nv) {
            PyErr_SetString(PyExc_IndexError, "face index out of bounds");
            return -1;
        }
    return 0;
}

static int check_out(Py_buffer *b, Py_ssize_t n, int width) {
    if (b->ndim != (width ? 2 : 1) || b->shape[0] != n || (width && b->shape[1] != width) ||
        b->itemsize != 8 || !is_format(b->format, 'd')) {
        PyErr_SetString(PyExc_ValueError, "output arrays: float64 (nf,) and (nf, 3)");
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(triangles_doc,
"triangles(vert, face, want_normal, minval, area, normal, center)\n\n"
"vert: float64 (nv, 3); face: int64 (nf, 3); area: float64 (nf,), normal, center:\n"
"float64 (nf, 3), writable: mesh_math.py's _triangles into them.");

static PyObject *triangles(PyObject *self, PyObject *args) {
    PyObject *o[5];
    Py_buffer b[5];
    int want, nb = 0;
    double minval;
    PyObject *result = NULL;
    Py_ssize_t nf, i;
    (void)self;

    if (!PyArg_ParseTuple(args, "OOpdOOO", &o[0], &o[1], &want, &minval, &o[2], &o[3], &o[4]))
        return NULL;
    for (nb = 0; nb < 5; nb++)
        if (get_buffer(o[nb], &b[nb], nb >= 2) < 0) goto done;
    if (check_mesh(&b[0], &b[1]) < 0) goto done;
    nf = b[1].shape[0];
    if (check_out(&b[2], nf, 0) < 0 || check_out(&b[3], nf, 3) < 0 || check_out(&b[4], nf, 3) < 0)
        goto done;
    {
        const double *v = (const double *)b[0].buf;
        const int64_t *f = (const int64_t *)b[1].buf;
        double *area = (double *)b[2].buf, *nrm = (double *)b[3].buf, *cen = (double *)b[4].buf;
        Py_BEGIN_ALLOW_THREADS
        for (i = 0; i < nf; i++) {
            const double *p1 = v + 3 * f[3 * i], *p2 = v + 3 * f[3 * i + 1],
                         *p3 = v + 3 * f[3 * i + 2];
            double b0 = p2[0] - p1[0], b1 = p2[1] - p1[1], b2 = p2[2] - p1[2];
            double c0 = p3[0] - p1[0], c1 = p3[1] - p1[1], c2 = p3[2] - p1[2];
            double n0 = b1 * c2 - b2 * c1, n1 = b2 * c0 - b0 * c2, n2 = b0 * c1 - b1 * c0;
            double ln = sqrt(n0 * n0 + n1 * n1 + n2 * n2);
            int small = ln < minval;
            cen[3 * i] = (p1[0] + p2[0] + p3[0]) / 3;
            cen[3 * i + 1] = (p1[1] + p2[1] + p3[1]) / 3;
            cen[3 * i + 2] = (p1[2] + p2[2] + p3[2]) / 3;
            if (want && !small) {
                n0 = n0 / ln;
                n1 = n1 / ln;
                n2 = n2 / ln;
            }
            nrm[3 * i] = n0;
            nrm[3 * i + 1] = n1;
            nrm[3 * i + 2] = n2;
            area[i] = small ? 0.0 : 0.5 * ln;
        }
        Py_END_ALLOW_THREADS
    }
    Py_INCREF(Py_None);
    result = Py_None;

done:
    while (nb-- > 0) PyBuffer_Release(&b[nb]);
    return result;
}

PyDoc_STRVAR(inertia_products_doc,
"inertia_products(vert, face, wc) -> list of 6 floats\n\n"
"vert: float64 (nv, 3); face: int64 (nf, 3); wc: float64 (nf,): mesh.py's\n"
"_inertia_products of the faces' corners D, E, F.");

static PyObject *inertia_products(PyObject *self, PyObject *args) {
    static const int pa[6] = {0, 1, 2, 0, 0, 1}, pb[6] = {0, 1, 2, 1, 2, 2};
    PyObject *o[3];
    Py_buffer b[3];
    int nb = 0, k;
    double sum[6] = {0, 0, 0, 0, 0, 0};
    PyObject *result = NULL;
    Py_ssize_t nf, i;
    (void)self;

    if (!PyArg_ParseTuple(args, "OOO", &o[0], &o[1], &o[2])) return NULL;
    for (nb = 0; nb < 3; nb++)
        if (get_buffer(o[nb], &b[nb], 0) < 0) goto done;
    if (check_mesh(&b[0], &b[1]) < 0) goto done;
    nf = b[1].shape[0];
    if (check_out(&b[2], nf, 0) < 0) goto done;
    {
        const double *v = (const double *)b[0].buf, *wc = (const double *)b[2].buf;
        const int64_t *f = (const int64_t *)b[1].buf;
        Py_BEGIN_ALLOW_THREADS
        for (i = 0; i < nf; i++) {
            const double *D = v + 3 * f[3 * i], *E = v + 3 * f[3 * i + 1],
                         *F = v + 3 * f[3 * i + 2];
            for (k = 0; k < 6; k++) {
                int a = pa[k], c = pb[k];
                double t = 2 * (D[a] * D[c] + E[a] * E[c] + F[a] * F[c]) + D[a] * E[c] +
                           D[c] * E[a] + D[a] * F[c] + D[c] * F[a] + E[a] * F[c] +
                           E[c] * F[a];
                t = wc[i] * t;
                sum[k] = i ? sum[k] + t : t; /* (the first term as it is: -0 stays) */
            }
        }
        Py_END_ALLOW_THREADS
    }
    result = Py_BuildValue("[dddddd]", sum[0], sum[1], sum[2], sum[3], sum[4], sum[5]);

done:
    while (nb-- > 0) PyBuffer_Release(&b[nb]);
    return result;
}

/* ------------------------------------------------------------------------------------
 * the convex hull graph's edge lists (hull.py's _hull_edges, the reference) */

PyDoc_STRVAR(hull_edges_doc,
"hull_edges(simp, local, edgeadr, edges) -> size or -1\n\n"
"simp: int64 (nf, 3) hull facets (point ids); local: int64 (npoint,), the local id of\n"
"each point (-1 off the hull); edgeadr: int64 (nvert,); edges: int64 (nvert + 6 nf,),\n"
"writable. For each hull vertex the local ids of the vertices sharing a facet with it,\n"
"each once, in the order first met (facets in order, their corners in order), each\n"
"list ending with -1 at edgeadr: the size used, or -1 where a facet's point has no\n"
"local id.");

static PyObject *hull_edges(PyObject *self, PyObject *args) {
    PyObject *o[4];
    Py_buffer b[4];
    int nb = 0, bad = 0;
    PyObject *result = NULL;
    Py_ssize_t nf, np_, nvert, npair = 0, size = 1, i, j, k, total = 0;
    int64_t *pg = NULL, *pg1 = NULL, *table = NULL, *count = NULL;
    (void)self;

    if (!PyArg_ParseTuple(args, "OOOO", &o[0], &o[1], &o[2], &o[3])) return NULL;
    for (nb = 0; nb < 4; nb++)
        if (get_buffer(o[nb], &b[nb], nb >= 2) < 0) goto done;
    if (b[0].ndim != 2 || b[0].shape[1] != 3 || b[1].ndim != 1 || b[2].ndim != 1 ||
        b[3].ndim != 1 || b[3].shape[0] != b[2].shape[0] + 6 * b[0].shape[0]) {
        PyErr_SetString(PyExc_ValueError, "hull_edges: wrong shapes");
        goto done;
    }
    for (i = 0; i < 4; i++)
        if (b[i].itemsize != 8 || !is_int64(b[i].format)) {
            PyErr_SetString(PyExc_ValueError, "hull_edges takes int64 C-contiguous arrays");
            goto done;
        }
    nf = b[0].shape[0];
    np_ = b[1].shape[0];
    nvert = b[2].shape[0];
    while (size < 12 * nf) size *= 2;
    pg = (int64_t *)PyMem_Malloc((size_t)(6 * nf + 1) * sizeof(int64_t));
    pg1 = (int64_t *)PyMem_Malloc((size_t)(6 * nf + 1) * sizeof(int64_t));
    table = (int64_t *)PyMem_Malloc((size_t)size * sizeof(int64_t));
    count = (int64_t *)PyMem_Calloc((size_t)(nvert + 1), sizeof(int64_t));
    if (!pg || !pg1 || !table || !count) {
        PyErr_NoMemory();
        goto done;
    }
    {
        const int64_t *simp = (const int64_t *)b[0].buf, *local = (const int64_t *)b[1].buf;
        int64_t *adr = (int64_t *)b[2].buf, *edges = (int64_t *)b[3].buf;
        Py_BEGIN_ALLOW_THREADS
        for (i = 0; i < size; i++) table[i] = -1;
        for (i = 0; i < nf && !bad; i++) {
            const int64_t *fc = simp + 3 * i;
            for (j = 0; j < 3 && !bad; j++)
                for (k = 0; k < 3; k++) {
                    int64_t g, g1;
                    uint64_t h;
                    Py_ssize_t slot;
                    if (fc[j] == fc[k]) continue;
                    if (fc[j] < 0 || fc[j] >= np_ || fc[k] < 0 || fc[k] >= np_ ||
                        local[fc[j]] < 0 || local[fc[j]] >= nvert || local[fc[k]] < 0 ||
                        local[fc[k]] >= nvert) {
                        bad = 1;
                        break;
                    }
                    g = local[fc[j]];
                    g1 = local[fc[k]];
                    h = ((uint64_t)g * 0x9E3779B97F4A7C15ULL) ^ ((uint64_t)g1 * 0xBF58476D1CE4E5B9ULL);
                    h ^= h >> 31;
                    slot = (Py_ssize_t)(h & (uint64_t)(size - 1));
                    for (;;) {
                        int64_t e = table[slot];
                        if (e < 0) {
                            table[slot] = npair;
                            pg[npair] = g;
                            pg1[npair++] = g1;
                            count[g]++;
                            break;
                        }
                        if (pg[e] == g && pg1[e] == g1) break;
                        slot = (slot + 1) & (size - 1);
                    }
                }
        }
        if (!bad) {
            /* each vertex's list at its address, in the order met, then -1 */
            for (i = 0; i < nvert; i++) {
                adr[i] = total;
                total += count[i] + 1;
                edges[total - 1] = -1;
                count[i] = adr[i];
            }
            for (i = 0; i < npair; i++) edges[count[pg[i]]++] = pg1[i];
        }
        Py_END_ALLOW_THREADS
    }
    result = PyLong_FromSsize_t(bad ? -1 : total);

done:
    PyMem_Free(pg);
    PyMem_Free(pg1);
    PyMem_Free(table);
    PyMem_Free(count);
    while (nb-- > 0) PyBuffer_Release(&b[nb]);
    return result;
}

/* ------------------------------------------------------------------------------------
 * unit face normals of the polygon merge (polygons.py's _makenormals, the reference) */

PyDoc_STRVAR(unit_normals_doc,
"unit_normals(vert, face, eps, out)\n\n"
"vert: float64 (nv, 3); face: int64 (nf, 3); out: float64 (nf, 3), writable: each\n"
"face's cross product divided by its length, [1, 0, 0] divided by it where the\n"
"length is below eps (inf or nan where it is 0), as polygons.py's _makenormals.");

static PyObject *unit_normals(PyObject *self, PyObject *args) {
    PyObject *o[3];
    Py_buffer b[3];
    int nb = 0;
    double eps;
    PyObject *result = NULL;
    Py_ssize_t nf, i;
    (void)self;

    if (!PyArg_ParseTuple(args, "OOdO", &o[0], &o[1], &eps, &o[2])) return NULL;
    for (nb = 0; nb < 3; nb++)
        if (get_buffer(o[nb], &b[nb], nb == 2) < 0) goto done;
    if (check_mesh(&b[0], &b[1]) < 0) goto done;
    nf = b[1].shape[0];
    if (check_out(&b[2], nf, 3) < 0) goto done;
    {
        const double *v = (const double *)b[0].buf;
        const int64_t *f = (const int64_t *)b[1].buf;
        double *out = (double *)b[2].buf;
        Py_BEGIN_ALLOW_THREADS
        for (i = 0; i < nf; i++) {
            const double *pa = v + 3 * f[3 * i], *pb = v + 3 * f[3 * i + 1],
                         *pc = v + 3 * f[3 * i + 2];
            double b0 = pb[0] - pa[0], b1 = pb[1] - pa[1], b2 = pb[2] - pa[2];
            double c0 = pc[0] - pa[0], c1 = pc[1] - pa[1], c2 = pc[2] - pa[2];
            double n0 = b1 * c2 - b2 * c1, n1 = b2 * c0 - b0 * c2, n2 = b0 * c1 - b1 * c0;
            double nrm = sqrt(n0 * n0 + n1 * n1 + n2 * n2);
            if (nrm < eps) {
                n0 = 1.0;
                n1 = 0.0;
                n2 = 0.0;
            }
            out[3 * i] = n0 / nrm;
            out[3 * i + 1] = n1 / nrm;
            out[3 * i + 2] = n2 / nrm;
        }
        Py_END_ALLOW_THREADS
    }
    Py_INCREF(Py_None);
    result = Py_None;

done:
    while (nb-- > 0) PyBuffer_Release(&b[nb]);
    return result;
}

static PyMethodDef methods[] = {
    {"accumulate", accumulate, METH_VARARGS, accumulate_doc},
    {"normals", normals, METH_VARARGS, normals_doc},
    {"dedup", dedup, METH_VARARGS, dedup_doc},
    {"triangles", triangles, METH_VARARGS, triangles_doc},
    {"inertia_products", inertia_products, METH_VARARGS, inertia_products_doc},
    {"hull_edges", hull_edges, METH_VARARGS, hull_edges_doc},
    {"unit_normals", unit_normals, METH_VARARGS, unit_normals_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_meshsum",
    "The mesh compiler's ordered float32 sums, vertex normals (mesh.py) and STL vertex "
    "merge (mesh_io.py), in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__meshsum(void) { return PyModule_Create(&module); }
