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

static PyMethodDef methods[] = {
    {"accumulate", accumulate, METH_VARARGS, accumulate_doc},
    {"normals", normals, METH_VARARGS, normals_doc},
    {"dedup", dedup, METH_VARARGS, dedup_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_meshsum",
    "The mesh compiler's ordered float32 sums, vertex normals (mesh.py) and STL vertex "
    "merge (mesh_io.py), in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__meshsum(void) { return PyModule_Create(&module); }
