/* std::mt19937_64 (the 64-bit Mersenne twister of the C++ standard library, which
 * MuJoCo's builtin textures draw their random marks from) in C: the twin of
 * tiphys/compiler/texture.py's MT19937_64, the reference, which gives the same
 * stream in numpy at about 156 numbers a step. Integer arithmetic only. Built by
 * setup.py; without it texture.py draws in numpy.
 *
 * Only the stable C API is used. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define NN 312
#define MM 156
#define UPPER UINT64_C(0xFFFFFFFF80000000)
#define LOWER UINT64_C(0x7FFFFFFF)
#define MATRIX_A UINT64_C(0xB5026F5AA96619E9)

static uint64_t mix(uint64_t a, uint64_t b) {
    uint64_t y = (a & UPPER) | (b & LOWER);
    return (y >> 1) ^ ((y & 1) ? MATRIX_A : 0);
}

static void twist(uint64_t *mt) {
    int i;
    for (i = 0; i < NN - MM; i++) mt[i] = mt[i + MM] ^ mix(mt[i], mt[i + 1]);
    for (; i < NN - 1; i++) mt[i] = mt[i + MM - NN] ^ mix(mt[i], mt[i + 1]);
    mt[NN - 1] = mt[MM - 1] ^ mix(mt[NN - 1], mt[0]);
}

PyDoc_STRVAR(stream_doc,
"stream(seed, count) -> bytes\n\n"
"The first count outputs of std::mt19937_64(seed), as native uint64.");

static PyObject *stream(PyObject *self, PyObject *args) {
    unsigned long long seed;
    Py_ssize_t count, k;
    uint64_t mt[NN], y;
    int i, index = NN;
    PyObject *out;
    uint64_t *buf;
    (void)self;

    if (!PyArg_ParseTuple(args, "Kn", &seed, &count)) return NULL;
    if (count < 0) {
        PyErr_SetString(PyExc_ValueError, "count must be >= 0");
        return NULL;
    }
    if (count > PY_SSIZE_T_MAX / 8) return PyErr_NoMemory();
    out = PyBytes_FromStringAndSize(NULL, count * 8);
    if (!out) return NULL;
    buf = (uint64_t *)PyBytes_AsString(out);
    if (!buf) {
        Py_DECREF(out);
        return NULL;
    }
    mt[0] = (uint64_t)seed;
    for (i = 1; i < NN; i++)
        mt[i] = UINT64_C(6364136223846793005) * (mt[i - 1] ^ (mt[i - 1] >> 62)) + (uint64_t)i;
    Py_BEGIN_ALLOW_THREADS
    for (k = 0; k < count; k++) {
        if (index >= NN) {
            twist(mt);
            index = 0;
        }
        y = mt[index++];
        y ^= (y >> 29) & UINT64_C(0x5555555555555555);
        y ^= (y << 17) & UINT64_C(0x71D67FFFEDA60000);
        y ^= (y << 37) & UINT64_C(0xFFF7EEE000000000);
        y ^= y >> 43;
        buf[k] = y;
    }
    Py_END_ALLOW_THREADS
    return out;
}

/* (double)y rounded to nearest, ties to even, in integer arithmetic (the same on
 * every compiler) */
static double to_double(uint64_t y) {
    int shift = 0;
    uint64_t q = y, rem, half;
    while ((q >> 53) != 0) {
        q >>= 1;
        shift++;
    }
    if (shift) {
        rem = y & ((UINT64_C(1) << shift) - 1);
        half = UINT64_C(1) << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) q++; /* q <= 2^53: exact below */
    }
    return (double)q * (double)(UINT64_C(1) << shift); /* both exact, shift <= 11 */
}

/* texture.py _uniform of one output */
static double uniform_of(uint64_t y) {
    const double top = 1.0 - 1.0 / 9007199254740992.0; /* 1 - 2^-53: np.nextafter(1, 0) */
    double u = to_double(y) / 18446744073709551616.0; /* / 2^64: exact */
    return u > top ? top : u;
}

PyDoc_STRVAR(below_doc,
"below(seed, count, threshold) -> bytes\n\n"
"For each of the first count outputs y of std::mt19937_64(seed): 1 where the\n"
"uniform draw min(y / 2^64, 1 - 2^-53) (texture.py _uniform) is below threshold,\n"
"else 0; uint8.");

static PyObject *below(PyObject *self, PyObject *args) {
    unsigned long long seed;
    Py_ssize_t count, k;
    double threshold;
    uint64_t mt[NN], y, lo, hi, mid;
    int all;
    int i, index = NN;
    PyObject *out;
    unsigned char *buf;
    (void)self;

    if (!PyArg_ParseTuple(args, "Knd", &seed, &count, &threshold)) return NULL;
    if (count < 0) {
        PyErr_SetString(PyExc_ValueError, "count must be >= 0");
        return NULL;
    }
    out = PyBytes_FromStringAndSize(NULL, count);
    if (!out) return NULL;
    buf = (unsigned char *)PyBytes_AsString(out);
    if (!buf) {
        Py_DECREF(out);
        return NULL;
    }
    /* the draw grows with y: the outputs below the threshold are those below the
     * smallest y whose draw is not (lo after the search), or all of them */
    all = uniform_of(UINT64_MAX) < threshold;
    lo = 0;
    hi = UINT64_MAX;
    while (lo < hi) {
        mid = lo + (hi - lo) / 2;
        if (uniform_of(mid) < threshold)
            lo = mid + 1;
        else
            hi = mid;
    }
    mt[0] = (uint64_t)seed;
    for (i = 1; i < NN; i++)
        mt[i] = UINT64_C(6364136223846793005) * (mt[i - 1] ^ (mt[i - 1] >> 62)) + (uint64_t)i;
    Py_BEGIN_ALLOW_THREADS
    for (k = 0; k < count; k++) {
        if (index >= NN) {
            twist(mt);
            index = 0;
        }
        y = mt[index++];
        y ^= (y >> 29) & UINT64_C(0x5555555555555555);
        y ^= (y << 17) & UINT64_C(0x71D67FFFEDA60000);
        y ^= (y << 37) & UINT64_C(0xFFF7EEE000000000);
        y ^= y >> 43;
        buf[k] = all || y < lo;
    }
    Py_END_ALLOW_THREADS
    return out;
}

static PyMethodDef methods[] = {
    {"stream", stream, METH_VARARGS, stream_doc},
    {"below", below, METH_VARARGS, below_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_mt64",
    "std::mt19937_64 for the builtin textures (see texture.py), in C.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__mt64(void) { return PyModule_Create(&module); }
