/* The whole-file fast path of the OBJ reader (tiphys/compiler/mesh_io.py,
 * _read_obj_fast) in one pass over the bytes: the same files are taken, to the same
 * numbers, and every other file is left (None) to the Python readers. mesh_io.py is
 * the reference; a number is converted by PyOS_string_to_double, the function
 * Python's float() calls, on a token that matches the fast path's number pattern, so
 * the doubles are the same bit for bit (or, for the usual short decimals, by one
 * correctly rounded division or multiplication that gives the same double:
 * fast_number). Built by setup.py; without it mesh_io.py
 * reads these files with its regular expressions.
 *
 * Taken: every "v", "vn" and "vt" line (as the general reader tells them: after
 * leading blanks, the keyword and a space or tab) starts at the keyword and holds 3
 * (vt: 2) numbers, then nothing or a blank and anything; no "l" or "p" line; every
 * "f" line starts at the keyword and is a triangle whose corners all have the form
 * of the first one ("i", "i/j", "i//k" or "i/j/k", unsigned decimal); the first
 * shape runs from the first "f" line to the next "g" or "o" line, and its indices
 * are not 0 and fit int64.
 *
 * Only the stable C API is used (Py_LIMITED_API is set by setup.py where the buffer
 * protocol belongs to it, Python 3.11 on). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *buf;
    Py_ssize_t len, cap; /* bytes */
} Buf;

static int put(Buf *b, const void *item, Py_ssize_t size) {
    if (b->len + size > b->cap) {
        Py_ssize_t cap = b->cap ? b->cap : 4096;
        char *mem;
        while (cap < b->len + size) cap *= 2;
        mem = PyMem_Realloc(b->buf, (size_t)cap);
        if (!mem) {
            PyErr_NoMemory();
            return -1;
        }
        b->buf = mem;
        b->cap = cap;
    }
    memcpy(b->buf + b->len, item, (size_t)size);
    b->len += size;
    return 0;
}

static int blank(char c) { return c == ' ' || c == '\t'; }
static int digit(char c) { return c >= '0' && c <= '9'; }

/* [+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)? over all of [s, e) */
static int is_number(const char *s, const char *e) {
    const char *p = s, *q;
    if (p < e && (*p == '+' || *p == '-')) p++;
    q = p;
    while (p < e && digit(*p)) p++;
    if (p > q) {
        if (p < e && *p == '.') p++;
        while (p < e && digit(*p)) p++;
    } else {
        if (p >= e || *p != '.') return 0;
        p++;
        q = p;
        while (p < e && digit(*p)) p++;
        if (p == q) return 0;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-')) p++;
        q = p;
        while (p < e && digit(*p)) p++;
        if (p == q) return 0;
    }
    return p == e;
}

/* fast_number needs double arithmetic without excess precision */
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
#define FAST_NUMBERS 1
#else
#define FAST_NUMBERS 0
#endif

/* exact powers of ten: a double holds every one up to 1e22 */
static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The value of a token of is_number's form, when it can be had with one correctly
 * rounded operation: its digits, the point dropped, as an integer of at most 2^53
 * (exact in a double) times or divided by a power of ten up to 1e22 (exact too), so
 * that the one rounding gives the correctly rounded value, the one
 * PyOS_string_to_double gives (Clinger's fast path). 1 with *x set, else 0. */
static int fast_number(const char *s, const char *e, double *x) {
    const char *p = s;
    uint64_t m = 0;
    int neg = 0, exp10 = 0, eneg = 0, ev = 0;
    if (*p == '+' || *p == '-') neg = *p++ == '-';
    for (; p < e && digit(*p); p++) {
        if (m > ((uint64_t)1 << 53) / 10) return 0;
        m = 10 * m + (uint64_t)(*p - '0');
    }
    if (p < e && *p == '.')
        for (p++; p < e && digit(*p); p++) {
            if (m > ((uint64_t)1 << 53) / 10) return 0;
            m = 10 * m + (uint64_t)(*p - '0');
            exp10--;
        }
    if (m > ((uint64_t)1 << 53)) return 0;
    if (p < e) { /* e or E */
        p++;
        if (*p == '+' || *p == '-') eneg = *p++ == '-';
        for (; p < e; p++) {
            if (ev > 100) return 0;
            ev = 10 * ev + (*p - '0');
        }
        exp10 += eneg ? -ev : ev;
    }
    if (exp10 < -22 || exp10 > 22) return 0;
    *x = exp10 < 0 ? (double)m / POW10[-exp10] : (double)m * POW10[exp10];
    if (neg) *x = -*x;
    return 1;
}

/* the token at *p (blanks skipped first, at least one required): its number
 * appended to out. 1 taken, 0 not this fast path's line, -1 error set. */
static int number(const char **p, const char *end, Buf *out) {
    const char *s = *p, *e;
    char local[64], *tok = local;
    double x;
    int rc = 1;
    if (s >= end || !blank(*s)) return 0;
    while (s < end && blank(*s)) s++;
    e = s;
    while (e < end && !blank(*e)) e++;
    if (!is_number(s, e)) return 0;
    if (FAST_NUMBERS && fast_number(s, e, &x)) {
        *p = e;
        return put(out, &x, sizeof x) ? -1 : 1;
    }
    if (e - s >= (Py_ssize_t)sizeof(local)) {
        tok = PyMem_Malloc((size_t)(e - s) + 1);
        if (!tok) {
            PyErr_NoMemory();
            return -1;
        }
    }
    memcpy(tok, s, (size_t)(e - s));
    tok[e - s] = '\0';
    x = PyOS_string_to_double(tok, NULL, NULL); /* overflow: +-inf, as float() */
    if (x == -1.0 && PyErr_Occurred()) rc = -1;
    if (tok != local) PyMem_Free(tok);
    if (rc == 1 && put(out, &x, sizeof x)) rc = -1;
    *p = e;
    return rc;
}

/* k numbers after the keyword, then the line's end or a blank. 1, 0 or -1 */
static int numbers(const char *p, const char *end, int k, Buf *out) {
    int i, rc;
    for (i = 0; i < k; i++)
        if ((rc = number(&p, end, out)) != 1) return rc;
    return p == end || blank(*p);
}

/* unsigned decimal at *p into *value; 0 where none or it passes int64 */
static int index_of(const char **p, const char *end, int64_t *value) {
    const char *s = *p;
    int64_t v = 0;
    if (s >= end || !digit(*s)) return 0;
    for (; s < end && digit(*s); s++) {
        if (v > (INT64_MAX - (*s - '0')) / 10) return 0;
        v = 10 * v + (*s - '0');
    }
    *p = s;
    *value = v;
    return 1;
}

enum { FORM_NONE = -1, FORM_V, FORM_VT, FORM_VN, FORM_VTN };

/* a corner "i", "i/j", "i//k" or "i/j/k" up to a blank or the line's end: its form
 * and (vertex, texcoord, normal) ids (0 where absent); FORM_NONE where it is not */
static int corner(const char **p, const char *end, int64_t id[3]) {
    const char *s = *p;
    int form = FORM_V;
    id[1] = id[2] = 0;
    if (!index_of(&s, end, &id[0])) return FORM_NONE;
    if (s < end && *s == '/') {
        s++;
        if (s < end && *s == '/') {
            s++;
            if (!index_of(&s, end, &id[2])) return FORM_NONE;
            form = FORM_VN;
        } else {
            if (!index_of(&s, end, &id[1])) return FORM_NONE;
            form = FORM_VT;
            if (s < end && *s == '/') {
                s++;
                if (!index_of(&s, end, &id[2])) return FORM_NONE;
                form = FORM_VTN;
            }
        }
    }
    if (s < end && !blank(*s)) return FORM_NONE;
    *p = s;
    return form;
}

/* a triangle line after its keyword, all corners of *form (set from the first
 * corner where still FORM_NONE); 1 taken (ids in tri, -1 where absent), else 0 */
static int triangle(const char *p, const char *end, int *form, int64_t tri[9]) {
    int k, f;
    int64_t id[3];
    for (k = 0; k < 3; k++) {
        if (p >= end || !blank(*p)) return 0;
        while (p < end && blank(*p)) p++;
        f = corner(&p, end, id);
        if (f == FORM_NONE) return 0;
        if (*form == FORM_NONE) *form = f;
        if (f != *form) return 0;
        /* index 0: the general reader's error, not this path's */
        if (id[0] == 0 || ((f == FORM_VT || f == FORM_VTN) && id[1] == 0) ||
            ((f == FORM_VN || f == FORM_VTN) && id[2] == 0))
            return 0;
        tri[3 * k] = id[0] - 1;
        tri[3 * k + 1] = (f == FORM_VT || f == FORM_VTN) ? id[1] - 1 : -1;
        tri[3 * k + 2] = (f == FORM_VN || f == FORM_VTN) ? id[2] - 1 : -1;
    }
    while (p < end && blank(*p)) p++;
    return p == end;
}

enum { LINE_OTHER, LINE_V, LINE_VN, LINE_VT, LINE_F, LINE_LP, LINE_GO };

static int kind_of(const char *p, const char *end) {
    char c0 = p < end ? p[0] : 0, c1 = p + 1 < end ? p[1] : 0, c2 = p + 2 < end ? p[2] : 0;
    if (c0 == 'v' && blank(c1)) return LINE_V;
    if (c0 == 'v' && c1 == 'n' && blank(c2)) return LINE_VN;
    if (c0 == 'v' && c1 == 't' && blank(c2)) return LINE_VT;
    if (c0 == 'f' && blank(c1)) return LINE_F;
    if ((c0 == 'l' || c0 == 'p') && blank(c1)) return LINE_LP;
    if ((c0 == 'g' || c0 == 'o') && blank(c1)) return LINE_GO;
    return LINE_OTHER;
}

PyDoc_STRVAR(scan_doc,
"scan(text) -> (v, vn, vt, tris) or None\n\n"
"text: the OBJ file's bytes, line ends already \"\\n\". As mesh_io._read_obj_fast:\n"
"v, vn, vt: bytes of native float64 (3, 3 and 2 a line); tris: bytes of native\n"
"int64, (n, 3, 3) (vertex, texcoord, normal) zero-based ids of the first shape's\n"
"triangles, -1 where absent. None where the file needs the general reader.");

static PyObject *scan(PyObject *self, PyObject *arg) {
    Py_buffer view;
    Buf v = {0}, vn = {0}, vt = {0}, tris = {0};
    PyObject *result = NULL;
    const char *text, *end, *line, *eol, *p;
    int form = FORM_NONE, shape = 0; /* 0 before the first face, 1 in it, 2 after */
    int rc = 1, kind, last = 0;
    int64_t tri[9];
    (void)self;

    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    text = (const char *)view.buf;
    end = text + view.len;
    for (line = text; rc == 1 && !last; line = last ? eol : eol + 1) {
        eol = memchr(line, '\n', (size_t)(end - line));
        if (!eol) {
            eol = end;
            last = 1;
        }
        p = line;
        while (p < eol && blank(*p)) p++;
        kind = kind_of(p, eol);
        if (kind == LINE_OTHER) continue;
        if (kind == LINE_LP) {
            rc = 0;
        } else if (kind == LINE_GO) {
            if (shape == 1) shape = 2;
        } else if (p != line) { /* a leading blank: the general reader's line */
            rc = 0;
        } else if (kind == LINE_V) {
            rc = numbers(p + 1, eol, 3, &v);
        } else if (kind == LINE_VN) {
            rc = numbers(p + 2, eol, 3, &vn);
        } else if (kind == LINE_VT) {
            rc = numbers(p + 2, eol, 2, &vt);
        } else { /* LINE_F */
            rc = triangle(p + 1, eol, &form, tri);
            if (rc == 1 && shape == 0) shape = 1;
            if (rc == 1 && shape == 1 && put(&tris, tri, sizeof tri)) rc = -1;
        }
    }
    if (rc == 1) {
        result = Py_BuildValue("(y#y#y#y#)", v.buf ? v.buf : "", v.len,
                               vn.buf ? vn.buf : "", vn.len, vt.buf ? vt.buf : "", vt.len,
                               tris.buf ? tris.buf : "", tris.len);
    } else if (rc == 0) {
        Py_INCREF(Py_None);
        result = Py_None;
    }
    PyMem_Free(v.buf);
    PyMem_Free(vn.buf);
    PyMem_Free(vt.buf);
    PyMem_Free(tris.buf);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_O, scan_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_objscan",
    "The OBJ reader's whole-file fast path (see mesh_io.py), in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__objscan(void) { return PyModule_Create(&module); }
