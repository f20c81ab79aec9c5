/* validate._validate_loop's common case, compiled: an event whose every field already has the type and
   range the loop checks for is kept and surveyed here, with the same steps through the C API (the same
   dict writes, in the same order, so the kept events, their shared strings and ids and the Survey come
   out the same); every other entry is handed to the Python loop (`fallback(index, entry)`), which
   defines what is dropped or repaired and reports it. A time too close to the int64-nanosecond limit for
   a double comparison to be exact also goes to Python. Built when a C compiler is there (pyproject's
   ext-modules, optional); validate.py runs its loop alone without it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_capi.h"

#define MAX_US 9223372036854775LL /* (2**63 - 1) // 1000: validate.MAX_US */
#define EXACT_DOUBLE 9007199254740992.0 /* 2**53: below it a double compares with MAX_US exactly */

static PyTypeObject *ARGS_TEXT; /* _cargs.ArgsText: args kept as text are as good as a dict here */
static PyObject *K_PH, *K_TS, *K_DUR, *K_ID, *K_PID, *K_TID, *K_NAME, *K_CAT, *K_ARGS, *K_S, *K_BP;

/* A number's value as both an int64 (when it is an int) and a double; 0 when it is not an exact int or
   float whose value the checks below can compare exactly. */
typedef struct {
    int is_int;
    long long i;
    double d;
} number;

static int read_number(PyObject *v, number *out) {
    if (PyLong_CheckExact(v)) {
        int64_t i;
        if (!exact_int64(v, &i))
            return 0;
        out->is_int = 1;
        out->i = i;
        out->d = (double)i;
        return 1;
    }
    if (PyFloat_CheckExact(v)) {
        out->is_int = 0;
        out->d = PyFloat_AS_DOUBLE(v);
        return 1;
    }
    return 0;
}

static int in_range(const number *n) { /* -MAX_US <= ts <= MAX_US, for sure (0: not sure, or not) */
    if (n->is_int)
        return n->i >= -MAX_US && n->i <= MAX_US;
    return n->d > -EXACT_DOUBLE && n->d < EXACT_DOUBLE; /* NaN fails both */
}

static int end_in_range(const number *ts, const number *dur) { /* ts + dur <= MAX_US, for sure */
    if (ts->is_int && dur->is_int) {
        long long end;
        return !__builtin_add_overflow(ts->i, dur->i, &end) && end <= MAX_US;
    }
    double end = ts->d + dur->d; /* int + float is a float addition in Python too */
    return end < EXACT_DOUBLE;
}

static int exact_str_or_absent(PyObject *e, PyObject *key) {
    PyObject *v = PyDict_GetItemWithError(e, key);
    return v == NULL ? !PyErr_Occurred() : PyUnicode_CheckExact(v);
}

/* The fields keep() reads again, as clean() found them (borrowed from the event; NULL: absent). */
typedef struct {
    PyObject *pid, *tid, *name, *cat;
} fields;

/* Whether the Python loop would keep `e` with no drop and no repair; `seen` gets the fields it read. */
static int clean(PyObject *e, PyObject *ph, fields *seen) {
    Py_ssize_t len = PyUnicode_GET_LENGTH(ph);
    Py_UCS4 c = len == 1 ? PyUnicode_READ_CHAR(ph, 0) : 0;
    number ts, dur;
    if (c != 'M') {
        PyObject *v = PyDict_GetItemWithError(e, K_TS);
        if (v == NULL || !read_number(v, &ts) || !in_range(&ts))
            return 0;
    }
    if (c == 'X') {
        PyObject *v = PyDict_GetItemWithError(e, K_DUR);
        if (v == NULL || !read_number(v, &dur) || !(dur.is_int ? dur.i >= 0 : dur.d >= 0) ||
            !end_in_range(&ts, &dur))
            return 0;
    } else if (c == 's' || c == 't' || c == 'f') {
        PyObject *v = PyDict_GetItemWithError(e, K_ID);
        if (v == NULL || !(PyLong_CheckExact(v) || PyUnicode_CheckExact(v)))
            return 0;
    }
    PyObject *keys_id[2] = {K_PID, K_TID}, *keys_text[2] = {K_NAME, K_CAT};
    PyObject **ids[2] = {&seen->pid, &seen->tid}, **texts[2] = {&seen->name, &seen->cat};
    for (int k = 0; k < 2; k++) {
        PyObject *v = *ids[k] = PyDict_GetItemWithError(e, keys_id[k]);
        if (v != NULL && v != Py_None && !PyLong_CheckExact(v) && !PyUnicode_CheckExact(v))
            return 0;
        v = *texts[k] = PyDict_GetItemWithError(e, keys_text[k]);
        if (v != NULL && v != Py_None && !PyUnicode_CheckExact(v))
            return 0;
    }
    PyObject *args = PyDict_GetItemWithError(e, K_ARGS);
    if (args != NULL && args != Py_None && !PyDict_CheckExact(args) && Py_TYPE(args) != ARGS_TEXT)
        return 0;
    if (c != 'X' && !(exact_str_or_absent(e, K_S) && exact_str_or_absent(e, K_BP)))
        return 0;
    return !PyErr_Occurred();
}

/* e[key] = shared.setdefault(value, value), where e[key] is `value`. */
static int share(PyObject *e, PyObject *key, PyObject *value, PyObject *shared) {
    PyObject *one = PyDict_SetDefault(shared, value, value);
    return one == NULL ? -1 : PyDict_SetItem(e, key, one);
}

/* For an exact int *id (a held reference): e[key] = shared_ids.setdefault(*id, *id), and *id becomes that
   shared int (`e["pid"] = pid = share_id(pid, pid)`). */
static int share_id(PyObject *e, PyObject *key, PyObject **id, PyObject *shared_ids) {
    if (!PyLong_CheckExact(*id))
        return 0;
    PyObject *one = PyDict_SetDefault(shared_ids, *id, *id);
    if (one == NULL || PyDict_SetItem(e, key, one) < 0)
        return -1;
    Py_INCREF(one);
    Py_SETREF(*id, one);
    return 0;
}

static PyObject *ZERO_TID_PHASES, *ONE;

/* an exact int of 0..2^32-1, the ids the importer keeps as they are */
static int is_uint32(PyObject *v) {
    int64_t n;
    return exact_int64(v, &n) && n >= 0 && n <= 4294967295LL;
}

static int is_int_zero(PyObject *v) { /* an exact int equal to 0 (`v == 0` for the ids kept here) */
    int64_t n;
    return exact_int64(v, &n) && n == 0;
}

/* The Python loop's steps for a kept event (after its checks): metadata_at, kept, phases, the shared
   strings and ids, pids, tids, zero_tid_pids, odd_ids. */
static int keep(PyObject *e, PyObject *ph, const fields *seen, PyObject *kept, PyObject *phases, PyObject *pids,
                PyObject *tids, PyObject *zero_tid_pids, PyObject *metadata_at, PyObject *odd_ids, PyObject *shared,
                PyObject *shared_ids) {
    PyObject *pid = seen->pid, *tid = seen->tid, *name = seen->name, *cat = seen->cat;
    int has_pid = pid != NULL, has_tid = tid != NULL;
    pid = has_pid ? pid : Py_None;
    tid = has_tid ? tid : Py_None;
    Py_INCREF(ph); Py_INCREF(pid); Py_INCREF(tid); /* held while e's values are replaced */
    int rc = -1;
    if (PyUnicode_GET_LENGTH(ph) == 1 && PyUnicode_READ_CHAR(ph, 0) == 'M') {
        PyObject *at = PyLong_FromSsize_t(PyList_GET_SIZE(kept));
        if (at == NULL || PyList_Append(metadata_at, at) < 0) {
            Py_XDECREF(at);
            goto done;
        }
        Py_DECREF(at);
    }
    if (PyList_Append(kept, e) < 0)
        goto done;
    PyObject *count = PyDict_GetItemWithError(phases, ph);
    if (count == NULL && PyErr_Occurred())
        goto done;
    PyObject *next = count == NULL ? PyLong_FromLong(1) : PyNumber_Add(count, ONE);
    if (next == NULL || PyDict_SetItem(phases, ph, next) < 0) {
        Py_XDECREF(next);
        goto done;
    }
    Py_DECREF(next);
    if (share(e, K_PH, ph, shared) < 0)
        goto done;
    if (name != NULL && PyUnicode_CheckExact(name) && share(e, K_NAME, name, shared) < 0)
        goto done;
    if (cat != NULL && PyUnicode_CheckExact(cat) && share(e, K_CAT, cat, shared) < 0)
        goto done;
    if (share_id(e, K_PID, &pid, shared_ids) < 0 || share_id(e, K_TID, &tid, shared_ids) < 0)
        goto done;
    if ((pid != Py_None || has_pid) && PyDict_SetItem(pids, pid, Py_None) < 0)
        goto done;
    if (tid != Py_None || has_tid) {
        if (PyDict_SetItem(tids, tid, Py_None) < 0)
            goto done;
        /* tid == 0 and ph in _ZERO_TID_PHASES and pid != 0 and pid is not None */
        if (is_int_zero(tid) && PySet_Contains(ZERO_TID_PHASES, ph) == 1 && pid != Py_None &&
            !is_int_zero(pid) && PySet_Add(zero_tid_pids, pid) < 0)
            goto done;
    }
    if ((has_pid && !is_uint32(pid)) || (has_tid && !is_uint32(tid))) {
        PyObject *at = PyLong_FromSsize_t(PyList_GET_SIZE(kept) - 1);
        if (at == NULL || PyList_Append(odd_ids, at) < 0) {
            Py_XDECREF(at);
            goto done;
        }
        Py_DECREF(at);
    }
    rc = 0;
done:
    Py_DECREF(ph); Py_DECREF(pid); Py_DECREF(tid);
    return rc;
}

/* validate(entries, fallback, kept, phases, pids, tids, zero_tid_pids, metadata_at, odd_ids, shared,
   shared_ids) */
static PyObject *validate(PyObject *self, PyObject *args) {
    PyObject *entries, *fallback, *kept, *phases, *pids, *tids, *zero_tid_pids, *metadata_at, *odd_ids, *shared,
        *shared_ids;
    if (!PyArg_ParseTuple(args, "O!OO!O!O!O!O!O!O!O!O!", &PyList_Type, &entries, &fallback, &PyList_Type, &kept,
                          &PyDict_Type, &phases, &PyDict_Type, &pids, &PyDict_Type, &tids, &PySet_Type,
                          &zero_tid_pids, &PyList_Type, &metadata_at, &PyList_Type, &odd_ids, &PyDict_Type,
                          &shared, &PyDict_Type, &shared_ids))
        return NULL;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(entries); i++) {
        PyObject *e = PyList_GET_ITEM(entries, i);
        Py_INCREF(e);
        int done = 0;
        if (PyDict_CheckExact(e)) {
            PyObject *ph = PyDict_GetItemWithError(e, K_PH);
            fields seen = {NULL, NULL, NULL, NULL};
            if (ph != NULL && PyUnicode_CheckExact(ph) && clean(e, ph, &seen)) {
                if (keep(e, ph, &seen, kept, phases, pids, tids, zero_tid_pids, metadata_at, odd_ids, shared,
                         shared_ids) < 0) {
                    Py_DECREF(e);
                    return NULL;
                }
                done = 1;
            }
            if (PyErr_Occurred()) {
                Py_DECREF(e);
                return NULL;
            }
        }
        if (!done) {
            PyObject *index = PyLong_FromSsize_t(i);
            PyObject *r = index == NULL ? NULL : PyObject_CallFunctionObjArgs(fallback, index, e, NULL);
            Py_XDECREF(index);
            if (r == NULL) {
                Py_DECREF(e);
                return NULL;
            }
            Py_DECREF(r);
        }
        Py_DECREF(e);
    }
    Py_RETURN_NONE;
}

static const char *const KEY_NAMES[] = {"ph", "ts", "dur", "id", "pid", "tid", "name", "cat", "args", "s", "bp"};
static PyObject **const KEYS[] = {&K_PH, &K_TS, &K_DUR, &K_ID, &K_PID, &K_TID, &K_NAME, &K_CAT, &K_ARGS, &K_S, &K_BP};
USE_KEYS_METHOD

static PyMethodDef methods[] = {
    USE_KEYS_ENTRY,
    {"validate", validate, METH_VARARGS, "validate._validate_loop's common case; the rest to fallback."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cvalidate", NULL, -1, methods};

PyMODINIT_FUNC PyInit__cvalidate(void) {
    if (intern_keys(KEY_NAMES, KEYS, 11) < 0)
        return NULL;
    ARGS_TEXT = import_args_text();
    if ((ONE = PyLong_FromLong(1)) == NULL)
        return NULL;
    ZERO_TID_PHASES = Py_BuildValue("{ssssssssssss}", "X", "", "i", "", "I", "", "s", "", "t", "", "f", "");
    if (ZERO_TID_PHASES == NULL)
        return NULL;
    PyObject *as_set = PySet_New(ZERO_TID_PHASES);
    Py_DECREF(ZERO_TID_PHASES);
    if ((ZERO_TID_PHASES = as_set) == NULL)
        return NULL;
    return PyModule_Create(&module);
}
