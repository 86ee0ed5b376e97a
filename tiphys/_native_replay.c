/* Native replay of recorded launches on Taichi 1.7.4's CPU backend (tiphys/replay.py).

A recorded step is a list of prepared launches: (compiled kernel, launch context) pairs
whose contexts hold their arrays' host addresses, so the runtime can launch them again
unchanged. Taichi's CPU launcher then copies the kernel's parameter table (every
parameter with its index vector) and re-derives each array pointer on every launch:
~0.7 us plus ~0.2 us per parameter, most of a one-world step. What it finally does
is call each of the kernel's compiled tasks with the context's RuntimeContext.

This module finds those two things once per launch, `tasks(prog, compiled, ctx)`:
the task entry points the launcher registered for the compiled kernel, and the
launch context's RuntimeContext; `run(program)` then calls them in order. It reads
Taichi's objects through their C++ layouts in Taichi 1.7.4 and checks each step
against what it must find (RTTI names of polymorphic objects, pointers that must
agree with each other, counts that must match), reading memory only through
process_vm_readv (or, where a seccomp profile forbids it, write() into a pipe), so a
different layout makes `tasks` return None (the caller keeps Taichi's own launch) and
never a crash.

Layouts used (Taichi 1.7.4, Itanium C++ ABI, LP64):
- a pybind11 instance with a simple layout holds its C++ pointer right after the
  PyObject header;
- LaunchContextBuilder: kernel_ (a Kernel's CallableBase, one pointer past the
  Kernel's vtable pointer), owned_ctx_, ctx_, arg_buffer_, result_buffer_ (each
  a pointer, in this order from offset 0); ctx_ == owned_ctx_;
- RuntimeContext: arg_buffer, runtime, cpu_thread_id, result_buffer;
- lang::CompiledKernelData: vtable pointer, then std::optional<KernelLaunchHandle>
  (int launch id, then the engaged flag);
- cpu::KernelLauncher: vtable pointer, executor pointer, int launch id counter, then
  std::vector<Context>, Context = {vector<TaskFunc> task_funcs, vector<...> parameters}
  (48 bytes); the vector holds exactly `counter` contexts;
- Program holds the LlvmProgramImpl, which holds the cpu::KernelLauncher, as
  pointers among their first members (found by scanning for the RTTI names).
*/
#define _GNU_SOURCE
#include <Python.h>
#include <stdint.h>
#include <string.h>

#if defined(__linux__) && (defined(__x86_64__) || defined(__aarch64__))
#define TIPHYS_NATIVE 1
#include <errno.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#else
#define TIPHYS_NATIVE 0
#endif

typedef int32_t (*task_fn)(void *);

/* an array fill as Taichi's CPU runtime makes it (Program::fill_ndarray_fast_u32:
   std::fill of the allocation's 32-bit words), callable like a task */
typedef struct {
    uint32_t *words;
    uint64_t count;
    uint32_t bits;
} fill_spec;

static int32_t fill_task(void *arg) {
    const fill_spec *spec = (const fill_spec *)arg;
    uint32_t *words = spec->words;
    for (uint64_t i = 0; i < spec->count; i++) words[i] = spec->bits;
    return 0;
}

#if TIPHYS_NATIVE

static int pipe_fds[2] = {-1, -1};

static int peek_by_pipe(const void *addr, void *out, size_t size) {
    /* where process_vm_readv is not allowed (a seccomp profile): write() from the
       address into a pipe, which fails with EFAULT instead of faulting */
    if (pipe_fds[0] < 0 && pipe(pipe_fds) != 0) return -1;
    char *dst = (char *)out;
    while (size > 0) {
        size_t part = size < 512 ? size : 512;
        ssize_t put = write(pipe_fds[1], addr, part);
        if (put != (ssize_t)part) {
            if (put > 0) (void)!read(pipe_fds[0], dst, (size_t)put);
            return -1;
        }
        if (read(pipe_fds[0], dst, part) != (ssize_t)part) return -1;
        addr = (const char *)addr + part;
        dst += part;
        size -= part;
    }
    return 0;
}

static int use_pipe = 0;

static int peek(const void *addr, void *out, size_t size) {
    /* 0 where `size` bytes at `addr` were read into `out`, -1 where they are not
       readable memory */
    if (addr == NULL) return -1;
    if (!use_pipe) {
        struct iovec local = {out, size};
        struct iovec remote = {(void *)addr, size};
        ssize_t got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
        if (got == (ssize_t)size) return 0;
        if (got >= 0 || errno == EFAULT) return -1;
        use_pipe = 1;  /* EPERM, ENOSYS: not allowed here */
    }
    return peek_by_pipe(addr, out, size);
}

static int peek_ptr(const void *addr, void **out) { return peek(addr, out, sizeof(void *)); }

/* 1 where `obj` points at a polymorphic object whose dynamic type's mangled name is
   `name` (the Itanium ABI: vtable pointer first, type_info at vtable[-1], its name
   string second) */
static int has_type(const void *obj, const char *name) {
    void *vtable, *typeinfo, *name_ptr;
    char buf[96];
    size_t n = strlen(name) + 1;
    if (n > sizeof(buf)) return 0;
    if (peek_ptr(obj, &vtable)) return 0;
    if (peek_ptr((char *)vtable - sizeof(void *), &typeinfo)) return 0;
    if (peek_ptr((char *)typeinfo + sizeof(void *), &name_ptr)) return 0;
    if (peek(name_ptr, buf, 1)) return 0;
    if (buf[0] == '*') name_ptr = (char *)name_ptr + 1;
    if (peek(name_ptr, buf, n)) return 0;
    return memcmp(buf, name, n) == 0;
}

static void *cpp_pointer(PyObject *obj) {
    /* the C++ object of a pybind11 instance with the simple layout */
    void *p;
    if (peek_ptr((char *)obj + sizeof(PyObject), &p)) return NULL;
    return p;
}

/* the word index in `obj` of the first of `words` pointers at an object of dynamic
   type `name`, or -1 */
static long member_index(const void *obj, size_t words, const char *name) {
    for (size_t i = 0; i < words; i++) {
        void *p;
        if (peek_ptr((const char *)obj + i * sizeof(void *), &p)) return -1;
        if (p != NULL && ((uintptr_t)p & 7u) == 0 && has_type(p, name)) return (long)i;
    }
    return -1;
}

static const char IMPL_TYPE[] = "N6taichi4lang15LlvmProgramImplE";
static const char LAUNCHER_TYPE[] = "N6taichi4lang3cpu14KernelLauncherE";

static void *launcher_of(void *program) {
    /* where the program keeps its LlvmProgramImpl and that its cpu::KernelLauncher
       (word offsets found once, then every lookup checked again: a program made
       after a reset may sit at the same address with other members) */
    static long impl_at = -1, launcher_at = -1;
    void *impl, *launcher;
    if (impl_at >= 0 && !peek_ptr((char *)program + impl_at * sizeof(void *), &impl) &&
        has_type(impl, IMPL_TYPE) &&
        !peek_ptr((char *)impl + launcher_at * sizeof(void *), &launcher) &&
        has_type(launcher, LAUNCHER_TYPE))
        return launcher;
    long i = member_index(program, 512, IMPL_TYPE);
    if (i < 0 || peek_ptr((char *)program + i * sizeof(void *), &impl)) return NULL;
    long j = member_index(impl, 256, LAUNCHER_TYPE);
    if (j < 0 || peek_ptr((char *)impl + j * sizeof(void *), &launcher)) return NULL;
    impl_at = i;
    launcher_at = j;
    return launcher;
}

#endif

PyDoc_STRVAR(tasks_doc,
"tasks(prog, compiled, ctx) -> (task addresses, context address) or None\n\n"
"The compiled tasks Taichi's CPU launcher calls for `compiled` (registered by an\n"
"earlier launch) and the RuntimeContext of the launch context `ctx` (filled and\n"
"launched before), or None where Taichi's objects are not laid out as expected.");

static PyObject *tasks(PyObject *self, PyObject *args) {
    PyObject *prog_obj, *compiled_obj, *ctx_obj;
    if (!PyArg_ParseTuple(args, "OOO", &prog_obj, &compiled_obj, &ctx_obj)) return NULL;
#if TIPHYS_NATIVE
    void *program = cpp_pointer(prog_obj);
    void *compiled = cpp_pointer(compiled_obj);
    void *builder = cpp_pointer(ctx_obj);
    if (!program || !compiled || !builder) Py_RETURN_NONE;

    /* the launch context: its RuntimeContext, checked against its buffers */
    void *fields[5];
    if (peek(builder, fields, sizeof(fields))) Py_RETURN_NONE;
    void *runtime_ctx = fields[2];
    if (runtime_ctx == NULL || fields[1] != runtime_ctx) Py_RETURN_NONE;
    /* kernel_ points at the Kernel's CallableBase, which follows its vtable pointer */
    if (!has_type((char *)fields[0] - sizeof(void *), "N6taichi4lang6KernelE")) Py_RETURN_NONE;
    void *rc[4];
    if (peek(runtime_ctx, rc, sizeof(rc))) Py_RETURN_NONE;
    if (rc[0] != fields[3] || rc[3] != fields[4] || rc[1] == NULL) Py_RETURN_NONE;

    /* the compiled kernel's launch id */
    if (!has_type(compiled, "N6taichi4lang4LLVM18CompiledKernelDataE")) Py_RETURN_NONE;
    int32_t launch_id;
    unsigned char engaged;
    if (peek((char *)compiled + 8, &launch_id, 4) || peek((char *)compiled + 12, &engaged, 1))
        Py_RETURN_NONE;
    if (engaged != 1 || launch_id < 0) Py_RETURN_NONE;

    /* the launcher's registered context for that id */
    void *launcher = launcher_of(program);
    if (launcher == NULL) Py_RETURN_NONE;
    void *executor, *vec[3];
    int32_t counter;
    if (peek_ptr((char *)launcher + 8, &executor) || peek((char *)launcher + 16, &counter, 4) ||
        peek((char *)launcher + 24, vec, sizeof(vec)))
        Py_RETURN_NONE;
    const size_t context_size = 48;
    size_t count = ((char *)vec[1] - (char *)vec[0]) / context_size;
    if (executor == NULL || vec[0] == NULL ||
        ((char *)vec[1] - (char *)vec[0]) % context_size != 0 || count != (size_t)counter ||
        launch_id >= counter)
        Py_RETURN_NONE;
    void *funcs[3];
    if (peek((char *)vec[0] + launch_id * context_size, funcs, sizeof(funcs))) Py_RETURN_NONE;
    size_t bytes = (char *)funcs[1] - (char *)funcs[0];
    if (funcs[0] == NULL || bytes == 0 || bytes % sizeof(void *) != 0 || bytes > 4096 * 8)
        Py_RETURN_NONE;
    size_t ntask = bytes / sizeof(void *);
    PyObject *list = PyTuple_New((Py_ssize_t)ntask);
    if (list == NULL) return NULL;
    for (size_t i = 0; i < ntask; i++) {
        void *fn;
        if (peek_ptr((char *)funcs[0] + i * sizeof(void *), &fn) || fn == NULL) {
            Py_DECREF(list);
            Py_RETURN_NONE;
        }
        PyObject *address = PyLong_FromVoidPtr(fn);
        if (address == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyTuple_SetItem(list, (Py_ssize_t)i, address);
    }
    PyObject *ctx_address = PyLong_FromVoidPtr(runtime_ctx);
    if (ctx_address == NULL) {
        Py_DECREF(list);
        return NULL;
    }
    PyObject *result = Py_BuildValue("(NN)", list, ctx_address);
    return result;
#else
    (void)prog_obj; (void)compiled_obj; (void)ctx_obj;
    Py_RETURN_NONE;
#endif
}

PyDoc_STRVAR(run_doc,
"run(program: bytes) -> None\n\n"
"Call each (task address, context address) pair packed in `program` (native\n"
"pointers, two per call) in order, as Taichi's CPU launcher would.");

static PyObject *run(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) != 0) return NULL;
    size_t n = (size_t)view.len / (2 * sizeof(void *));
    void *const *pairs = (void *const *)view.buf;
    for (size_t i = 0; i < n; i++) {
        task_fn fn = (task_fn)pairs[2 * i];
        fn(pairs[2 * i + 1]);
    }
    PyBuffer_Release(&view);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(timed_doc,
"timed(program: bytes, out: writable buffer of float64) -> None\n\n"
"run(program), adding each call's wall time in seconds to out[i] (one slot per\n"
"pair): where the time of a replayed step goes, task by task.");

static PyObject *timed(PyObject *self, PyObject *args) {
    PyObject *program, *out;
    if (!PyArg_ParseTuple(args, "OO", &program, &out)) return NULL;
    Py_buffer view, times;
    if (PyObject_GetBuffer(program, &view, PyBUF_SIMPLE) != 0) return NULL;
    if (PyObject_GetBuffer(out, &times, PyBUF_WRITABLE) != 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    size_t n = (size_t)view.len / (2 * sizeof(void *));
    if ((size_t)times.len < n * sizeof(double)) {
        PyBuffer_Release(&view);
        PyBuffer_Release(&times);
        PyErr_SetString(PyExc_ValueError, "timed: out holds fewer slots than program calls");
        return NULL;
    }
    void *const *pairs = (void *const *)view.buf;
    double *slot = (double *)times.buf;
#if TIPHYS_NATIVE
    struct timespec a, b;
    for (size_t i = 0; i < n; i++) {
        task_fn fn = (task_fn)pairs[2 * i];
        clock_gettime(CLOCK_MONOTONIC, &a);
        fn(pairs[2 * i + 1]);
        clock_gettime(CLOCK_MONOTONIC, &b);
        slot[i] += (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
    }
#else
    (void)pairs; (void)slot;
#endif
    PyBuffer_Release(&view);
    PyBuffer_Release(&times);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(fill_doc,
"fill(address, count, kind, value) -> (spec, spec address)\n\n"
"A fill of `count` 32-bit words at `address` with `value` as Taichi's runtime fills\n"
"(kind 'f': value as a C float, 'i': int32, 'u': uint32), packed in the bytes `spec`\n"
"whose address, with FILL_TASK, makes a (task, context) pair of a program; the\n"
"caller keeps `spec` alive as long as the program.");

static PyObject *fill(PyObject *self, PyObject *args) {
    unsigned long long address, count;
    int kind;
    PyObject *value;
    if (!PyArg_ParseTuple(args, "KKCO", &address, &count, &kind, &value)) return NULL;
    fill_spec spec;
    memset(&spec, 0, sizeof(spec));
    spec.words = (uint32_t *)(uintptr_t)address;
    spec.count = count;
    if (kind == 'f') {
        double v = PyFloat_AsDouble(value);
        if (v == -1.0 && PyErr_Occurred()) return NULL;
        float f = (float)v;
        memcpy(&spec.bits, &f, sizeof(f));
    } else if (kind == 'i' || kind == 'u') {
        if (!PyLong_Check(value)) {
            PyErr_SetString(PyExc_TypeError, "fill: an integer fill takes an int");
            return NULL;
        }
        long long v = PyLong_AsLongLong(value);
        if (v == -1 && PyErr_Occurred()) return NULL;
        if (kind == 'i' ? (v < INT32_MIN || v > INT32_MAX) : (v < 0 || v > (long long)UINT32_MAX)) {
            PyErr_SetString(PyExc_OverflowError, "fill: value out of the array's range");
            return NULL;
        }
        int32_t i32 = (int32_t)v;
        uint32_t u32 = (uint32_t)v;
        if (kind == 'i') memcpy(&spec.bits, &i32, sizeof(i32));
        else spec.bits = u32;
    } else {
        PyErr_SetString(PyExc_ValueError, "fill: kind is 'f', 'i' or 'u'");
        return NULL;
    }
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)&spec, sizeof(spec));
    if (bytes == NULL) return NULL;
    char *where = PyBytes_AsString(bytes);
    if (where == NULL) {
        Py_DECREF(bytes);
        return NULL;
    }
    return Py_BuildValue("(NN)", bytes, PyLong_FromVoidPtr(where));
}

PyDoc_STRVAR(read_by_pipe_doc,
"read_by_pipe(flag: bool) -> None\n\n"
"Read Taichi's objects through a pipe instead of process_vm_readv (what happens by\n"
"itself where a seccomp profile forbids process_vm_readv); for tests.");

static PyObject *read_by_pipe(PyObject *self, PyObject *arg) {
    int flag = PyObject_IsTrue(arg);
    if (flag < 0) return NULL;
#if TIPHYS_NATIVE
    use_pipe = flag;
#endif
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"read_by_pipe", read_by_pipe, METH_O, read_by_pipe_doc},
    {"fill", fill, METH_VARARGS, fill_doc},
    {"tasks", tasks, METH_VARARGS, tasks_doc},
    {"run", run, METH_O, run_doc},
    {"timed", timed, METH_VARARGS, timed_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native_replay",
    "Recorded CPU launches called straight into Taichi's compiled tasks.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native_replay(void) {
    PyObject *mod = PyModule_Create(&module);
    if (mod == NULL) return NULL;
    if (PyModule_AddIntConstant(mod, "SUPPORTED", TIPHYS_NATIVE) < 0 ||
        PyModule_AddObject(mod, "FILL_TASK", PyLong_FromVoidPtr((void *)fill_task)) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
