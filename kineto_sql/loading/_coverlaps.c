/* prepare._nests for every thread at once, compiled: whether each thread's X events (in lane order) all
   fit on one stack, i.e. whether the overlap split leaves the thread as it is.

   The Python loop walks all 75k X events of hta_trace_diff_control in ~11 ms (plus ~3 ms turning the two
   int64 columns into lists for it); this reads the columns in place in well under 1 ms. It takes only
   int64 columns (the scan's, where every time fits); the caller runs the Python loop for any other.
   Built when a C compiler is there (pyproject's ext-modules, optional); prepare.py falls back without it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

static int is_int64_format(const char *f) {
    if (f == NULL)
        return 0;
    if (*f == '@' || *f == '=' || *f == '<')
        f++;
    return (f[0] == 'l' || f[0] == 'q') && f[1] == '\0';
}

static int int64_column(PyObject *array, Py_buffer *view) {
    if (PyObject_GetBuffer(array, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (view->itemsize != 8 || view->ndim != 1 || !is_int64_format(view->format)) {
        PyBuffer_Release(view);
        PyErr_SetString(PyExc_TypeError, "an int64 column is needed");
        return -1;
    }
    return 0;
}

/* nests(starts, ends, firsts, stops) -> [bool per thread]: events firsts[k]..stops[k]-1 of the columns
   (a thread's X events in lane order: start ns, end ns) all nest. */
static PyObject *nests(PyObject *self, PyObject *args) {
    PyObject *starts_array, *ends_array, *firsts, *stops;
    if (!PyArg_ParseTuple(args, "OOO!O!", &starts_array, &ends_array, &PyList_Type, &firsts, &PyList_Type, &stops))
        return NULL;
    if (PyList_GET_SIZE(firsts) != PyList_GET_SIZE(stops)) {
        PyErr_SetString(PyExc_ValueError, "firsts and stops differ in length");
        return NULL;
    }
    Py_buffer starts_view, ends_view;
    if (int64_column(starts_array, &starts_view) < 0)
        return NULL;
    if (int64_column(ends_array, &ends_view) < 0) {
        PyBuffer_Release(&starts_view);
        return NULL;
    }
    const int64_t *start = starts_view.buf, *end = ends_view.buf;
    Py_ssize_t n = starts_view.len / 8, threads = PyList_GET_SIZE(firsts);
    PyObject *out = PyList_New(threads);
    int64_t *stack = PyMem_Malloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (out == NULL || stack == NULL || ends_view.len / 8 != n) {
        if (out != NULL && stack != NULL)
            PyErr_SetString(PyExc_ValueError, "the two columns differ in length");
        else
            PyErr_NoMemory();
        Py_CLEAR(out);
        goto done;
    }
    for (Py_ssize_t k = 0; k < threads; k++) {
        Py_ssize_t first = PyLong_AsSsize_t(PyList_GET_ITEM(firsts, k));
        Py_ssize_t stop = PyLong_AsSsize_t(PyList_GET_ITEM(stops, k));
        if (PyErr_Occurred() || first < 0 || stop > n || first > stop) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_IndexError, "a thread's events lie outside the columns");
            Py_CLEAR(out);
            goto done;
        }
        int fits = 1;
        Py_ssize_t depth = 0;
        for (Py_ssize_t i = first; i < stop && fits; i++) { /* the steps of prepare._nests */
            while (depth && stack[depth - 1] <= start[i])
                depth--;
            if (depth && end[i] > stack[depth - 1])
                fits = 0;
            else
                stack[depth++] = end[i];
        }
        PyObject *answer = fits ? Py_True : Py_False;
        Py_INCREF(answer);
        PyList_SET_ITEM(out, k, answer);
    }
done:
    PyMem_Free(stack);
    PyBuffer_Release(&starts_view);
    PyBuffer_Release(&ends_view);
    return out;
}

static PyMethodDef methods[] = {
    {"nests", nests, METH_VARARGS, "nests(starts, ends, firsts, stops): prepare._nests of each thread."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_coverlaps", NULL, -1, methods};

PyMODINIT_FUNC PyInit__coverlaps(void) { return PyModule_Create(&module); }
