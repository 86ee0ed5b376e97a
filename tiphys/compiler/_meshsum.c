/* The ordered single-precision sums of tiphys/compiler/mesh.py (_ordered_accumulate,
 * the reference): acc[idx[k]] += vals[k] for k in order, each addition done in double
 * and rounded to float, as MuJoCo's 'float += double'. The reference does the k-th
 * additions to every row together with numpy, a Python step per level, which costs
 * more than the sums on the many small meshes of a robot. Built by setup.py; without
 * it mesh.py sums in numpy.
 *
 * Only the stable C API is used (Py_LIMITED_API is set by setup.py where the buffer
 * protocol belongs to it, Python 3.11 on). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
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

static PyMethodDef methods[] = {
    {"accumulate", accumulate, METH_VARARGS, accumulate_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_meshsum",
    "The mesh compiler's ordered float32 sums (see mesh.py), in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__meshsum(void) { return PyModule_Create(&module); }
