/* MuJoCo's MakePolygons after the normals, as tiphys/compiler/polygons.py does it,
 * on arrays: the polygon tree walk (_PolygonSet.add and _rebalance: which polygon
 * each face joins in MuJoCo's std::set<MeshPolygon>, a libc++ red-black tree whose
 * comparator is not a strict weak order), then each polygon's boundary edges,
 * islands and vertex loops (_Polygon.insert_face and paths). polygons.py is the
 * reference; this file must give the same answers bit for bit, so the arithmetic
 * is IEEE double with no contraction (a fused multiply-add in the dot product would
 * move faces across FACE_TOL) and every comparison is written as in Python (a NaN
 * compares false). Built by setup.py; without it polygons.py does it all in Python.
 *
 * Only the stable C API is used (Py_LIMITED_API is set by setup.py where the
 * buffer protocol belongs to it, Python 3.11 on). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <stdint.h>
#include <stdlib.h>
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

/* ---- each polygon's boundary edges, islands and vertex loops (polygons.py
 * _Polygon.insert_face and _Polygon.paths), for the polygons of several faces ----
 *
 * A polygon's edges are records numbered in the order they are added (the sequence
 * numbers of polygons.py); a hash table maps a directed edge to the FIFO queue of its
 * live copies (a removal takes the oldest, as MuJoCo's linear scan does). The table
 * is shared by all polygons: a slot belongs to the polygon whose stamp it carries, so
 * nothing is cleared between polygons. Islands are a union-find whose roots are the
 * islands created first; an island's label is its root's rank among the roots. */

typedef struct {
    int64_t a, b;
    Py_ssize_t island; /* the island it was added with (a root then) */
    Py_ssize_t next;   /* the next younger live copy of the same edge, or NONE */
    char alive;
} Edge;

typedef struct {
    int64_t stamp; /* owner: the polygon (or loop pass) that wrote the slot */
    int64_t a, b;
    Py_ssize_t head, tail; /* edge slots: the queue of live copies; follow slots: head */
} Slot;

typedef struct {
    Slot *slot;
    Py_ssize_t mask; /* the current polygon's part of the table: mask + 1 slots */
    int64_t stamp;
} Table;

static Py_ssize_t slot_of(const Table *h, int64_t a, int64_t b) {
    uint64_t k = (uint64_t)a * UINT64_C(0x9E3779B97F4A7C15) ^
                 ((uint64_t)b + UINT64_C(0x632BE59BD9B4E019)) * UINT64_C(0xC2B2AE3D27D4EB4F);
    Py_ssize_t i = (Py_ssize_t)((k ^ (k >> 29)) & (uint64_t)h->mask);
    for (;;) {
        const Slot *s = h->slot + i;
        if (s->stamp != h->stamp || (s->a == a && s->b == b)) return i;
        i = (i + 1) & h->mask;
    }
}

/* the slot of (a, b), claimed (with an empty queue) when the polygon has none yet */
static Slot *claim(Table *h, int64_t a, int64_t b) {
    Slot *s = h->slot + slot_of(h, a, b);
    if (s->stamp != h->stamp) {
        s->stamp = h->stamp;
        s->a = a;
        s->b = b;
        s->head = s->tail = NONE;
    }
    return s;
}

typedef struct {
    Table h;
    Edge *edge;
    Py_ssize_t nedge;
    Py_ssize_t *uf;
    Py_ssize_t nuf, nisland;
    /* paths: */
    Py_ssize_t *live, *label, *first;
    int64_t *path;
} Poly;

static Py_ssize_t root(Py_ssize_t *uf, Py_ssize_t island) {
    while (uf[island] != island) {
        uf[island] = uf[uf[island]];
        island = uf[island];
    }
    return island;
}

static void add_edge(Poly *p, int64_t a, int64_t b, Py_ssize_t island) {
    Slot *s = claim(&p->h, a, b);
    Edge *e = p->edge + p->nedge;
    e->a = a;
    e->b = b;
    e->island = island;
    e->next = NONE;
    e->alive = 1;
    if (s->head == NONE)
        s->head = p->nedge;
    else
        p->edge[s->tail].next = p->nedge;
    s->tail = p->nedge;
    p->nedge++;
}

/* removes the oldest live copy of (a, b); its island's root, or NONE */
static Py_ssize_t take_edge(Poly *p, int64_t a, int64_t b) {
    Slot *s = p->h.slot + slot_of(&p->h, a, b);
    Edge *e;
    if (s->stamp != p->h.stamp || s->head == NONE) return NONE;
    e = p->edge + s->head;
    e->alive = 0;
    s->head = e->next;
    return root(p->uf, e->island);
}

static void insert_face(Poly *p, const int64_t *f) {
    const int64_t v[4] = {f[0], f[1], f[2], f[0]};
    Py_ssize_t island = NONE, other, lo, hi;
    int added[3], nadded = 0, k;
    for (k = 0; k < 3; k++) {
        other = take_edge(p, v[k + 1], v[k]); /* attach across a shared edge */
        if (other == NONE) {
            added[nadded++] = k;
        } else if (island == NONE) {
            island = other;
        } else if (other != island) {
            p->nisland--;
            lo = island < other ? island : other;
            hi = island < other ? other : island;
            p->uf[hi] = lo;
            island = lo;
        }
    }
    if (island == NONE) {
        island = p->nuf;
        p->uf[p->nuf++] = island;
        p->nisland++;
    }
    for (k = 0; k < nadded; k++) add_edge(p, v[added[k]], v[added[k] + 1], island);
}

typedef struct {
    int32_t *num, *vert;
    Py_ssize_t nnum, nvert, capnum, capvert;
} Out;

static int grow(void **buf, Py_ssize_t *cap, Py_ssize_t need, size_t item) {
    Py_ssize_t cap2 = *cap ? *cap : 64;
    void *mem;
    if (need <= *cap) return 0;
    while (cap2 < need) cap2 *= 2;
    mem = realloc(*buf, item * (size_t)cap2); /* the C heap: the GIL may be released */
    if (!mem) return -1;
    *buf = mem;
    *cap = cap2;
    return 0;
}

/* a vertex id as int32, as np.fromiter(..., np.int32) would take it */
static int put_loop(Out *o, const int64_t *loop, Py_ssize_t n) {
    Py_ssize_t k;
    if (grow((void **)&o->num, &o->capnum, o->nnum + 1, sizeof(int32_t)) ||
        grow((void **)&o->vert, &o->capvert, o->nvert + n, sizeof(int32_t)))
        return -1;
    for (k = 0; k < n; k++) {
        if (loop[k] < INT32_MIN || loop[k] > INT32_MAX) return -2;
        o->vert[o->nvert + k] = (int32_t)loop[k];
    }
    o->num[o->nnum++] = (int32_t)n;
    o->nvert += n;
    return 0;
}

/* the closed loops of the polygon, one per island (edge 0, the oldest live edge, is
 * never followed; a walk gives up after as many steps as there are live edges);
 * loops of fewer than 3 vertices are left out. 0, or -1/-2 as put_loop. */
static int paths(Poly *p, Out *o) {
    Py_ssize_t nlive = 0, nroot = 0, i, k, isl, lab, n, step;
    Py_ssize_t *live = p->live, *label = p->label, *first = p->first;
    int64_t *path = p->path;
    int rc;
    for (i = 0; i < p->nedge; i++)
        if (p->edge[i].alive) live[nlive++] = i;
    if (nlive == 3) {
        int64_t loop[3];
        for (k = 0; k < 3; k++) loop[k] = p->edge[live[k]].a;
        return put_loop(o, loop, 3);
    }
    for (i = 0; i < p->nuf; i++) label[i] = p->uf[i] == i ? nroot++ : NONE;
    for (lab = 0; lab < nroot; lab++) first[lab] = NONE;
    p->h.stamp++; /* the follow map: (label, vertex) -> the first edge k >= 1 leaving */
    for (k = 0; k < nlive; k++) {
        const Edge *e = p->edge + live[k];
        lab = label[root(p->uf, e->island)];
        if (first[lab] == NONE) first[lab] = live[k];
        if (k) {
            Slot *s = claim(&p->h, (int64_t)lab, e->a);
            if (s->head == NONE) s->head = live[k];
        }
    }
    for (isl = 0; isl < p->nisland; isl++) {
        int64_t nxt;
        if (isl >= nroot || first[isl] == NONE) continue;
        path[0] = p->edge[first[isl]].a;
        path[1] = nxt = p->edge[first[isl]].b;
        n = 2;
        for (step = 0; step < nlive; step++) {
            const Slot *s = p->h.slot + slot_of(&p->h, (int64_t)isl, nxt);
            if (s->stamp != p->h.stamp) break;
            nxt = p->edge[s->head].b;
            if (nxt == path[0]) {
                if (n >= 3 && (rc = put_loop(o, path, n)) != 0) return rc;
                break;
            }
            path[n++] = nxt;
        }
    }
    return 0;
}

static Py_ssize_t pow2_at_least(Py_ssize_t n) {
    Py_ssize_t p = 8;
    while (p < n) p *= 2;
    return p;
}

static int is_int64(const char *format) {
    return format && (!strcmp(format, "q") || !strcmp(format, "@q") || !strcmp(format, "=q") ||
                      (sizeof(long) == 8 && (!strcmp(format, "l") || !strcmp(format, "@l") ||
                                             !strcmp(format, "=l"))));
}

PyDoc_STRVAR(polygons_doc,
"polygons(normals, faces, tol, minval) -> (polyvertnum, polyvert)\n\n"
"normals: float64 (n, 3) and faces: int64 (n, 3), both C-contiguous. The polygons'\n"
"vertex loops in tree order, as polygons.py _loop_arrays(_polygons_python(...)):\n"
"two bytearrays of native int32, each loop's vertex count and the loops' vertex\n"
"ids one after the other.");

static PyObject *polygons(PyObject *self, PyObject *args) {
    PyObject *nobj, *fobj, *num_b = NULL, *vert_b = NULL, *result = NULL;
    double tol, minval;
    Py_buffer nview, fview;
    Py_ssize_t n, i, count = 0, maxjoin = 0, nslot = 1;
    Tree t;
    Py_ssize_t *mem = NULL, *start = NULL, *joins = NULL, *scratch = NULL;
    char *black = NULL;
    int64_t *owner = NULL, *order = NULL, *path = NULL;
    Slot *slot = NULL;
    Edge *edge = NULL;
    Poly p;
    Out o = {NULL, NULL, 0, 0, 0, 0};
    int rc = 0;
    (void)self;

    if (!PyArg_ParseTuple(args, "OOdd", &nobj, &fobj, &tol, &minval)) return NULL;
    if (PyObject_GetBuffer(nobj, &nview, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    if (PyObject_GetBuffer(fobj, &fview, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyBuffer_Release(&nview);
        return NULL;
    }
    if (nview.ndim != 2 || nview.shape[1] != 3 || nview.itemsize != 8 ||
        !is_double(nview.format)) {
        PyErr_SetString(PyExc_ValueError, "normals must be a C-contiguous float64 (n, 3) array");
        goto done;
    }
    if (fview.ndim != 2 || fview.shape[1] != 3 || fview.itemsize != 8 ||
        !is_int64(fview.format) || fview.shape[0] != nview.shape[0]) {
        PyErr_SetString(PyExc_ValueError,
                        "faces must be a C-contiguous int64 (n, 3) array, one row a normal");
        goto done;
    }
    n = nview.shape[0];
    mem = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(4 * n + 3));
    black = PyMem_Malloc((size_t)n + 1);
    owner = PyMem_Malloc(sizeof(int64_t) * ((size_t)n + 1));
    order = PyMem_Malloc(sizeof(int64_t) * ((size_t)n + 1));
    start = PyMem_Malloc(sizeof(Py_ssize_t) * ((size_t)n + 2));
    joins = PyMem_Malloc(sizeof(Py_ssize_t) * ((size_t)n + 1));
    if (!mem || !black || !owner || !order || !start || !joins) {
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
    for (i = 0; i < n; i++) add(&t, (const double *)nview.buf, i, tol, minval, owner);
    count = inorder(&t, mem + 3 * (n + 1), order);
    /* the faces that join each polygon, in face order (a counting sort by owner) */
    for (i = 0; i <= n + 1; i++) start[i] = 0;
    for (i = 0; i < n; i++)
        if (owner[i] >= 0 && owner[i] != i) start[owner[i] + 2]++;
    for (i = 0; i < n; i++) {
        if (start[i + 2] > maxjoin) maxjoin = start[i + 2];
        start[i + 2] += start[i + 1];
    }
    for (i = 0; i < n; i++)
        if (owner[i] >= 0 && owner[i] != i) joins[start[owner[i] + 1]++] = i;
    /* now start[j] .. start[j + 1]: the faces joining polygon j */
    Py_END_ALLOW_THREADS

    /* scratch for the largest polygon: 3 edges a face; islands at most one a face */
    nslot = pow2_at_least(4 * 3 * (maxjoin + 1));
    slot = PyMem_Malloc(sizeof(Slot) * (size_t)nslot);
    edge = PyMem_Malloc(sizeof(Edge) * (size_t)(3 * (maxjoin + 1)));
    /* uf, live, label, first: at most 3 * (maxjoin + 1) each */
    scratch = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)(4 * 3 * (maxjoin + 1)));
    path = PyMem_Malloc(sizeof(int64_t) * (size_t)(3 * (maxjoin + 1) + 2));
    if (!slot || !edge || !scratch || !path) {
        PyErr_NoMemory();
        goto done;
    }
    for (i = 0; i < nslot; i++) slot[i].stamp = 0;
    p.h.slot = slot;
    p.h.stamp = 0;
    p.edge = edge;
    p.uf = scratch;
    p.live = scratch + 3 * (maxjoin + 1);
    p.label = scratch + 6 * (maxjoin + 1);
    p.first = scratch + 9 * (maxjoin + 1);
    p.path = path;

    Py_BEGIN_ALLOW_THREADS
    for (i = 0; i < count && !rc; i++) {
        const int64_t *face = (const int64_t *)fview.buf + 3 * order[i];
        Py_ssize_t s = start[order[i]], e = start[order[i] + 1], j;
        if (s == e) { /* a single face */
            rc = put_loop(&o, face, 3);
            continue;
        }
        p.h.stamp++;
        p.h.mask = pow2_at_least(4 * 3 * (e - s + 1)) - 1;
        p.nedge = 0;
        p.uf[0] = 0;
        p.nuf = p.nisland = 1;
        add_edge(&p, face[0], face[1], 0);
        add_edge(&p, face[1], face[2], 0);
        add_edge(&p, face[2], face[0], 0);
        for (j = s; j < e; j++) insert_face(&p, (const int64_t *)fview.buf + 3 * joins[j]);
        rc = paths(&p, &o);
    }
    Py_END_ALLOW_THREADS

    if (rc == -1) {
        PyErr_NoMemory();
        goto done;
    }
    if (rc == -2) {
        PyErr_SetString(PyExc_OverflowError, "a polygon vertex id does not fit int32");
        goto done;
    }
    /* bytearrays: numpy views of them are writable, as the Python path's arrays */
    num_b = PyByteArray_FromStringAndSize((const char *)o.num,
                                          (Py_ssize_t)sizeof(int32_t) * o.nnum);
    vert_b = PyByteArray_FromStringAndSize((const char *)o.vert,
                                           (Py_ssize_t)sizeof(int32_t) * o.nvert);
    if (num_b && vert_b) result = PyTuple_Pack(2, num_b, vert_b);

done:
    Py_XDECREF(num_b);
    Py_XDECREF(vert_b);
    PyMem_Free(mem);
    PyMem_Free(black);
    PyMem_Free(owner);
    PyMem_Free(order);
    PyMem_Free(start);
    PyMem_Free(joins);
    PyMem_Free(slot);
    PyMem_Free(edge);
    PyMem_Free(scratch);
    PyMem_Free(path);
    free(o.num);
    free(o.vert);
    PyBuffer_Release(&nview);
    PyBuffer_Release(&fview);
    return result;
}

static PyMethodDef methods[] = {
    {"walk", walk, METH_VARARGS, walk_doc},
    {"polygons", polygons, METH_VARARGS, polygons_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_polytree",
    "MuJoCo's mesh polygons (see polygons.py), in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__polytree(void) { return PyModule_Create(&module); }
