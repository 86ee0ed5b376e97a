/* The polygon tree walk of tiphys/compiler/polygons.py (_PolygonSet.add and
 * _rebalance) on arrays: which polygon each face joins in MuJoCo's
 * std::set<MeshPolygon>, a libc++ red-black tree whose comparator is not a strict
 * weak order. polygons.py is the reference; this file must give the same answers
 * bit for bit, so the arithmetic is IEEE double with no contraction (a fused
 * multiply-add in the dot product would move faces across FACE_TOL) and every
 * comparison is written as in Python (a NaN compares false). Built by setup.py;
 * without it polygons.py walks the tree in Python.
 *
 * Only the stable C API is used (Py_LIMITED_API is set by setup.py where the
 * buffer protocol belongs to it, Python 3.11 on). */
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
/* gcc ignores the STDC pragma; setup.py passes -ffp-contract=off */

#if !defined(FLT_EVAL_METHOD) || FLT_EVAL_METHOD != 0
#error "double arithmetic with excess precision would not match Python's"
#endif

#define NONE (-1)

typedef struct {
    Py_ssize_t *left, *right, *parent;
    char *black;
    Py_ssize_t end; /* the end node: its left child is the root */
} Tree;

static int is_left(const Tree *t, Py_ssize_t x) { return x == t->left[t->parent[x]]; }

static void rotate_left(Tree *t, Py_ssize_t x) {
    Py_ssize_t y = t->right[x];
    t->right[x] = t->left[y];
    if (t->right[x] != NONE) t->parent[t->right[x]] = x;
    t->parent[y] = t->parent[x];
    if (is_left(t, x))
        t->left[t->parent[x]] = y;
    else
        t->right[t->parent[x]] = y;
    t->left[y] = x;
    t->parent[x] = y;
}

static void rotate_right(Tree *t, Py_ssize_t x) {
    Py_ssize_t y = t->left[x];
    t->left[x] = t->right[y];
    if (t->left[x] != NONE) t->parent[t->left[x]] = x;
    t->parent[y] = t->parent[x];
    if (is_left(t, x))
        t->left[t->parent[x]] = y;
    else
        t->right[t->parent[x]] = y;
    t->right[y] = x;
    t->parent[x] = y;
}

/* red-black repair after inserting x (red), as polygons.py _rebalance */
static void rebalance(Tree *t, Py_ssize_t x) {
    Py_ssize_t root = t->left[t->end], y;
    t->black[x] = (x == root);
    while (x != root && !t->black[t->parent[x]]) {
        if (is_left(t, t->parent[x])) {
            y = t->right[t->parent[t->parent[x]]];
            if (y != NONE && !t->black[y]) {
                x = t->parent[x];
                t->black[x] = 1;
                x = t->parent[x];
                t->black[x] = (x == root);
                t->black[y] = 1;
            } else {
                if (!is_left(t, x)) {
                    x = t->parent[x];
                    rotate_left(t, x);
                }
                x = t->parent[x];
                t->black[x] = 1;
                x = t->parent[x];
                t->black[x] = 0;
                rotate_right(t, x);
                break;
            }
        } else {
            y = t->left[t->parent[t->parent[x]]];
            if (y != NONE && !t->black[y]) {
                x = t->parent[x];
                t->black[x] = 1;
                x = t->parent[x];
                t->black[x] = (x == root);
                t->black[y] = 1;
            } else {
                if (is_left(t, x)) {
                    x = t->parent[x];
                    rotate_right(t, x);
                }
                x = t->parent[x];
                t->black[x] = 1;
                x = t->parent[x];
                t->black[x] = 0;
                rotate_left(t, x);
                break;
            }
        }
    }
}

/* face i: owner[i] = i (a new polygon), j (joins polygon j: find's answer) or -1
 * (dropped: emplace met an equivalent polygon that is not the lower bound) */
static void add(Tree *t, const double *normal, Py_ssize_t i, double tol, double minval,
                int64_t *owner) {
    const double nx = normal[3 * i], ny = normal[3 * i + 1], nz = normal[3 * i + 2];
    Py_ssize_t parent = t->end, node = t->left[t->end];
    Py_ssize_t bound = parent, equiv = NONE;
    while (node != NONE) {
        const double *m = normal + 3 * node;
        double dot, d;
        parent = node;
        dot = m[0] * nx;
        dot = dot + m[1] * ny;
        dot = dot + m[2] * nz;
        if (dot > tol) { /* equivalent */
            bound = equiv = node;
            node = t->left[node];
            continue;
        }
        d = m[0] - nx;
        if (d > minval) { node = t->right[node]; continue; }
        if (d < -minval) { bound = node; node = t->left[node]; continue; }
        d = m[1] - ny;
        if (d > minval) { node = t->right[node]; continue; }
        if (d < -minval) { bound = node; node = t->left[node]; continue; }
        d = m[2] - nz;
        if (d > minval) { node = t->right[node]; continue; }
        if (d < -minval) { bound = node; node = t->left[node]; continue; }
        bound = equiv = node; /* no coordinate decides: equivalent */
        node = t->left[node];
    }
    if (equiv == NONE) {
        t->parent[i] = parent;
        if (bound == parent)
            t->left[parent] = i;
        else
            t->right[parent] = i;
        rebalance(t, i);
        owner[i] = i;
    } else if (bound == equiv) {
        owner[i] = bound;
    } else {
        owner[i] = NONE;
    }
}

/* in-order node ids into order; returns their count */
static Py_ssize_t inorder(const Tree *t, Py_ssize_t *stack, int64_t *order) {
    Py_ssize_t top = 0, count = 0, node = t->left[t->end];
    while (top || node != NONE) {
        while (node != NONE) {
            stack[top++] = node;
            node = t->left[node];
        }
        node = stack[--top];
        order[count++] = node;
        node = t->right[node];
    }
    return count;
}

static int is_double(const char *format) {
    return format && (!strcmp(format, "d") || !strcmp(format, "@d") || !strcmp(format, "=d"));
}

PyDoc_STRVAR(walk_doc,
"walk(normals, tol, minval) -> (owner, order)\n\n"
"normals: float64 (n, 3), C-contiguous. Returns two bytes objects of native int64:\n"
"owner[i] = i where face i starts a polygon, j where it joins polygon j, -1 where\n"
"it is dropped; order = the polygons (their first faces) in tree order.");

static PyObject *walk(PyObject *self, PyObject *args) {
    PyObject *obj, *owner_b = NULL, *order_b = NULL, *result = NULL;
    double tol, minval;
    Py_buffer view;
    Py_ssize_t n, i, count = 0;
    Tree t;
    Py_ssize_t *mem = NULL;
    char *black = NULL;
    int64_t *owner = NULL, *order = NULL;
    (void)self;

    if (!PyArg_ParseTuple(args, "Odd", &obj, &tol, &minval)) return NULL;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    if (view.ndim != 2 || view.shape[1] != 3 || view.itemsize != 8 || !is_double(view.format)) {
        PyErr_SetString(PyExc_ValueError, "normals must be a C-contiguous float64 (n, 3) array");
        goto done;
    }
    n = view.shape[0];
    /* left, right, parent (n + 1 each, the end node last) and the in-order stack */
    mem = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(4 * n + 3));
    black = PyMem_Malloc((size_t)n + 1);
    owner = PyMem_Malloc(sizeof(int64_t) * ((size_t)n + 1));
    order = PyMem_Malloc(sizeof(int64_t) * ((size_t)n + 1));
    if (!mem || !black || !owner || !order) {
        PyErr_NoMemory();
        goto done;
    }
    t.left = mem;
    t.right = mem + (n + 1);
    t.parent = mem + 2 * (n + 1);
    t.black = black;
    t.end = n;
    for (i = 0; i <= n; i++) t.left[i] = t.right[i] = t.parent[i] = NONE;
    memset(black, 0, (size_t)n + 1);

    Py_BEGIN_ALLOW_THREADS
    for (i = 0; i < n; i++) add(&t, (const double *)view.buf, i, tol, minval, owner);
    count = inorder(&t, mem + 3 * (n + 1), order);
    Py_END_ALLOW_THREADS

    owner_b = PyBytes_FromStringAndSize((const char *)owner, (Py_ssize_t)sizeof(int64_t) * n);
    order_b = PyBytes_FromStringAndSize((const char *)order, (Py_ssize_t)sizeof(int64_t) * count);
    if (owner_b && order_b) result = PyTuple_Pack(2, owner_b, order_b);

done:
    Py_XDECREF(owner_b);
    Py_XDECREF(order_b);
    PyMem_Free(mem);
    PyMem_Free(black);
    PyMem_Free(owner);
    PyMem_Free(order);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, walk_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_polytree",
    "MuJoCo's polygon tree walk (see polygons.py), in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__polytree(void) { return PyModule_Create(&module); }
