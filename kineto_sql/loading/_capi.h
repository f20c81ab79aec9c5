/* The few C API steps the loader's compiled loops (_cscan.c, _cvalidate.c, _cflows.c) all take, written once.
   Each is the C form of one Python expression the loops' Python definitions use. */
#ifndef KINETO_SQL_CAPI_H
#define KINETO_SQL_CAPI_H

#include <Python.h>
#include <stdint.h>

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

#endif
