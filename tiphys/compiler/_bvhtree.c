/* One bounding-volume hierarchy built node by node, as tiphys/compiler/bvh.py's
 * _exact_tree (the reference) does it: each node's box the union of its elements'
 * boxes (widened by EPS on a side thinner than EPS), its elements halved by
 * nth_element_libcxx (libc++'s std::nth_element with MuJoCo's comparator: by the
 * point's coordinate unless within EPS, then by element index) along the longest
 * side, nodes in pre-order. bvh.py uses it for the hierarchies whose order is not a
 * strict weak order (NaN points, chains of points within EPS), where the split is
 * what the selection algorithm makes of it. The arithmetic is IEEE double with no
 * contraction and every comparison is written as in Python (a NaN compares false).
 * Built by setup.py; without it bvh.py builds these hierarchies in Python.
 *
 * Only the stable C API is used (Py_LIMITED_API is set by setup.py where the buffer
 * protocol belongs to it, Python 3.11 on). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(_MSC_VER)
#pragma fp_contract(off)
#elif defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "double arithmetic with excess precision would not match numpy's"
#endif

#define EPS 1e-14

typedef struct {
    const double *lo, *hi, *point;
    int32_t *depth, *child, *element;
    double *aabb;
    Py_ssize_t nnode;
} Tree;

static int less(const double *value, Py_ssize_t x, Py_ssize_t y) {
    double d = value[3 * x] - value[3 * y];
    if (fabs(d) > EPS) return value[3 * x] < value[3 * y];
    return x < y;
}

#define LESS(i, j) less(value, a[i], a[j])
#define SWAP(i, j) do { Py_ssize_t t_ = a[i]; a[i] = a[j]; a[j] = t_; } while (0)

static int sort3(Py_ssize_t *a, const double *value, Py_ssize_t x, Py_ssize_t y,
                 Py_ssize_t z) {
    if (!LESS(y, x)) {
        if (!LESS(z, y)) return 0;
        SWAP(y, z);
        if (LESS(y, x)) {
            SWAP(x, y);
            return 2;
        }
        return 1;
    }
    if (LESS(z, y)) {
        SWAP(x, z);
        return 1;
    }
    SWAP(x, y);
    if (LESS(z, y)) {
        SWAP(y, z);
        return 2;
    }
    return 1;
}

static void selection_sort(Py_ssize_t *a, const double *value, Py_ssize_t first,
                           Py_ssize_t last) {
    for (Py_ssize_t f = first; f < last - 1; f++) {
        Py_ssize_t m = f;
        for (Py_ssize_t i = f + 1; i < last; i++)
            if (LESS(i, m)) m = i;
        if (m != f) SWAP(f, m);
    }
}

/* a[0:n] rearranged as bvh.py's nth_element_libcxx does it */
static void nth_element(Py_ssize_t *a, Py_ssize_t n, Py_ssize_t nth, const double *value) {
    Py_ssize_t first = 0, last = n;
    for (;;) {
        if (nth == last) return;
        Py_ssize_t len = last - first;
        if (len <= 1) return;
        if (len == 2) {
            if (LESS(last - 1, first)) SWAP(first, last - 1);
            return;
        }
        if (len == 3) {
            sort3(a, value, first, first + 1, last - 1);
            return;
        }
        if (len <= 7) {
            selection_sort(a, value, first, last);
            return;
        }
        Py_ssize_t m = first + len / 2, lm1 = last - 1;
        int swaps = sort3(a, value, first, m, lm1);
        Py_ssize_t i = first, j = lm1;
        if (!LESS(i, m)) {
            int guard = 0;
            for (;;) {
                j--;
                if (i == j) break;
                if (LESS(j, m)) {
                    guard = 1;
                    break;
                }
            }
            if (guard) {
                SWAP(i, j);
                swaps++;
            } else {
                i++;
                j = last - 1;
                if (!LESS(first, j)) {
                    for (;;) {
                        if (i == j) return;
                        if (LESS(first, i)) {
                            SWAP(i, j);
                            swaps++;
                            i++;
                            break;
                        }
                        i++;
                    }
                }
                if (i == j) return;
                for (;;) {
                    while (!LESS(first, i)) i++;
                    j--;
                    while (LESS(first, j)) j--;
                    if (i >= j) break;
                    SWAP(i, j);
                    swaps++;
                    i++;
                }
                if (nth < i) return;
                first = i;
                continue;
            }
        }
        i++;
        if (i < j) {
            for (;;) {
                while (LESS(i, m)) i++;
                j--;
                while (!LESS(j, m)) j--;
                if (i >= j) break;
                SWAP(i, j);
                swaps++;
                if (m == i) m = j;
                i++;
            }
        }
        if (i != m && LESS(m, i)) {
            SWAP(i, m);
            swaps++;
        }
        if (nth == i) return;
        if (swaps == 0) {
            Py_ssize_t lo = nth < i ? first : i, hi = nth < i ? i : last;
            Py_ssize_t jj = lo, mm = lo;
            int sorted = 0;
            for (;;) {
                if (++jj == hi) {
                    sorted = 1;
                    break;
                }
                if (LESS(jj, mm)) break;
                mm = jj;
            }
            if (sorted) return;
        }
        if (nth < i)
            last = i;
        else
            first = i + 1;
    }
}

static Py_ssize_t make(Tree *t, Py_ssize_t *items, Py_ssize_t n, int level) {
    double lo[3], hi[3];
    Py_ssize_t index = t->nnode++;
    for (int k = 0; k < 3; k++) {
        lo[k] = t->lo[3 * items[0] + k];
        hi[k] = t->hi[3 * items[0] + k];
    }
    /* numpy's min/max propagate NaN */
    for (Py_ssize_t e = 1; e < n; e++)
        for (int k = 0; k < 3; k++) {
            double l = t->lo[3 * items[e] + k], h = t->hi[3 * items[e] + k];
            if (isnan(lo[k]) || isnan(l)) lo[k] = NAN;
            else if (l < lo[k]) lo[k] = l;
            if (isnan(hi[k]) || isnan(h)) hi[k] = NAN;
            else if (h > hi[k]) hi[k] = h;
        }
    for (int k = 0; k < 3; k++)
        if (fabs(lo[k] - hi[k]) < EPS) {
            lo[k] -= EPS;
            hi[k] += EPS;
        }
    t->depth[index] = level;
    t->child[2 * index] = t->child[2 * index + 1] = -1;
    t->element[index] = -1;
    for (int k = 0; k < 3; k++) {
        t->aabb[6 * index + k] = (hi[k] + lo[k]) / 2;
        t->aabb[6 * index + 3 + k] = (hi[k] - lo[k]) / 2;
    }
    if (n == 1) {
        t->element[index] = (int32_t)items[0];
        return index;
    }
    double side[3] = {hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]};
    int axis = 0;
    if (side[1] >= side[0] + EPS) axis = 1;
    if (side[2] >= side[axis] + EPS) axis = 2;
    Py_ssize_t m = n / 2;
    nth_element(items, n, m, t->point + axis);
    t->child[2 * index] = (int32_t)make(t, items, m, level + 1);
    t->child[2 * index + 1] = (int32_t)make(t, items + m, n - m, level + 1);
    return index;
}

static int is_format(const char *format, char code) {
    return format && ((format[0] == code && !format[1]) ||
                      ((format[0] == '@' || format[0] == '=') && format[1] == code &&
                       !format[2]));
}

PyDoc_STRVAR(tree_doc,
"tree(lo, hi, point, depth, child, element, aabb)\n\n"
"lo, hi, point: float64 (n, 3), n >= 1; depth, element: int32 (2n-1,), child: int32\n"
"(2n-1, 2), aabb: float64 (2n-1, 6), all C-contiguous, written in place.");

static PyObject *tree(PyObject *self, PyObject *args) {
    PyObject *obj[7];
    Py_buffer buf[7];
    int got = 0;
    PyObject *result = NULL;
    (void)self;
    if (!PyArg_ParseTuple(args, "OOOOOOO", &obj[0], &obj[1], &obj[2], &obj[3], &obj[4],
                          &obj[5], &obj[6]))
        return NULL;
    for (; got < 7; got++) {
        int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (got >= 3 ? PyBUF_WRITABLE : 0);
        if (PyObject_GetBuffer(obj[got], &buf[got], flags) < 0) goto done;
    }
    Py_ssize_t n = buf[0].len / 24;
    int ok = n >= 1;
    for (int k = 0; k < 3; k++)
        ok = ok && is_format(buf[k].format, 'd') && buf[k].len == n * 24;
    ok = ok && is_format(buf[3].format, 'i') && buf[3].len == (2 * n - 1) * 4;
    ok = ok && is_format(buf[4].format, 'i') && buf[4].len == (2 * n - 1) * 8;
    ok = ok && is_format(buf[5].format, 'i') && buf[5].len == (2 * n - 1) * 4;
    ok = ok && is_format(buf[6].format, 'd') && buf[6].len == (2 * n - 1) * 48;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError,
                        "tree takes float64 (n, 3) x3, int32 (2n-1,), int32 (2n-1, 2), "
                        "int32 (2n-1,) and float64 (2n-1, 6) C-contiguous arrays");
        goto done;
    }
    Py_ssize_t *items = (Py_ssize_t *)malloc(sizeof(Py_ssize_t) * n);
    if (!items) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t e = 0; e < n; e++) items[e] = e;
    Tree t = {(const double *)buf[0].buf, (const double *)buf[1].buf,
              (const double *)buf[2].buf, (int32_t *)buf[3].buf, (int32_t *)buf[4].buf,
              (int32_t *)buf[5].buf, (double *)buf[6].buf, 0};
    Py_BEGIN_ALLOW_THREADS
    make(&t, items, n, 0);
    Py_END_ALLOW_THREADS
    free(items);
    Py_INCREF(Py_None);
    result = Py_None;
done:
    for (int k = 0; k < got; k++) PyBuffer_Release(&buf[k]);
    return result;
}

static PyMethodDef methods[] = {
    {"tree", tree, METH_VARARGS, tree_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_bvhtree",
    "One bounding-volume hierarchy as MuJoCo builds it (see bvh.py), in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__bvhtree(void) { return PyModule_Create(&module); }
