/* The few C API steps the loader's compiled loops (_cscan.c, _cvalidate.c, _cflows.c) all take, written once.
   Each is the C form of one Python expression the loops' Python definitions use. */
#ifndef KINETO_SQL_CAPI_H
#define KINETO_SQL_CAPI_H

#include <Python.h>
#include <stdint.h>

/* An event's args object kept as its text (loading.lazy_args; made by _cargs.c): its `texts` is the
   `[text,text,...]` of one piece's cut args, this one's text at start..start+size. */
typedef struct {
    PyObject_HEAD
    PyObject *texts;
    Py_ssize_t start, size;
    PyObject *correlation; /* its top-level "correlation" (the last one, as a JSON parser keeps): int or None */
} ArgsText;

/* _cargs.ArgsText, or NULL (no error left set) where _cargs was not built: then no event holds one. */
static inline PyTypeObject *import_args_text(void) {
    PyObject *module = PyImport_ImportModule("kineto_sql.loading._cargs");
    if (module == NULL) {
        PyErr_Clear();
        return NULL;
    }
    PyObject *type = PyObject_GetAttrString(module, "ArgsText");
    Py_DECREF(module);
    if (type == NULL || !PyType_Check(type)) {
        PyErr_Clear();
        Py_XDECREF(type);
        return NULL;
    }
    return (PyTypeObject *)type; /* (kept for the life of the process) */
}

/* d.get(key): borrowed; Py_None when absent; NULL (an error set) when the lookup failed. */
static inline PyObject *get_or_none(PyObject *d, PyObject *key) {
    PyObject *v = PyDict_GetItemWithError(d, key);
    return v != NULL ? v : (PyErr_Occurred() ? NULL : Py_None);
}

/* An int object's value into *out: 1, or 0 (no error left set) when it is not an exact int of int64. */
static inline int exact_int64(PyObject *v, int64_t *out) {
    if (!PyLong_CheckExact(v))
        return 0;
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow || (x == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        return 0;
    }
    *out = (int64_t)x;
    return 1;
}

/* The module's interned key strings: *keys[k] = sys.intern(names[k]); -1 when one could not be made. */
static inline int intern_keys(const char *const names[], PyObject **const keys[], int count) {
    for (int k = 0; k < count; k++)
        if ((*keys[k] = PyUnicode_InternFromString(names[k])) == NULL)
            return -1;
    return 0;
}

/* Each of the module's key strings that `sample` (a dict orjson parsed) holds an equal key of becomes that
   key object. orjson hands out one cached object per key name (not the interned string), so a lookup with
   that very object matches by identity instead of comparing the text: validate, scan and the flow loops
   did ~15% of the loader child's work in dict lookups, much of it in that comparison. A key the sample
   lacks, or one orjson's cache later replaces, is still found, by its text. */
static inline void adopt_keys(PyObject *sample, PyObject **const keys[], int count) {
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(sample, &pos, &key, &value)) {
        for (int k = 0; k < count; k++) {
            if (key != *keys[k] && PyUnicode_CheckExact(key) && PyUnicode_Compare(key, *keys[k]) == 0) {
                Py_INCREF(key);
                Py_SETREF(*keys[k], key);
            }
        }
    }
}

/* The module method use_keys(sample) over the module's KEY_NAMES / KEYS (adopt_keys). */
#define USE_KEYS_METHOD                                                                                     \
    static PyObject *use_keys(PyObject *self, PyObject *sample) {                                          \
        if (!PyDict_CheckExact(sample)) {                                                                  \
            PyErr_SetString(PyExc_TypeError, "use_keys takes a dict");                                     \
            return NULL;                                                                                   \
        }                                                                                                  \
        adopt_keys(sample, KEYS, (int)(sizeof(KEYS) / sizeof(KEYS[0])));                                   \
        Py_RETURN_NONE;                                                                                    \
    }
#define USE_KEYS_ENTRY {"use_keys", use_keys, METH_O, "use_keys(sample): look events up with sample's key objects."}

#endif
