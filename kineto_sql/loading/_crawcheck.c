/* Two checks of the loader's over the raw text and its parse, compiled: rawcheck._long_digit_runs (every
   maximal run of 19 or more ASCII digits in a text) and source.DepthProbe's unwrapping (innermost, below).

   The text-facts helper (loading.text_facts) runs it on every piece of the trace while the loader child
   parses; the numpy form would make the helper import numpy (~58 ms at the lowest priority, on the core
   the engine's process is busy importing on), as the child itself no longer does. The same word test as
   the numpy form: a run of 19+ digits covers a whole aligned 8-byte word, and a word is 8 digits when
   every byte's high nibble is 3 and stays 3 when 6 is added; only around such a word are bytes looked
   at one by one. Built when a C compiler is there (pyproject's ext-modules, optional); rawcheck falls
   back to numpy without it; tests/test_rawcheck.py holds the two to the same runs. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define HIGH 0xF0F0F0F0F0F0F0F0ULL
#define THREES 0x3030303030303030ULL
#define SIXES 0x0606060606060606ULL

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

/* long_digit_runs(text) -> [(start, end), ...] in text order. */
static PyObject *long_digit_runs(PyObject *self, PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view))
        return NULL;
    const unsigned char *data = view.buf;
    Py_ssize_t n = view.len, words = n / 8;
    PyObject *out = PyList_New(0);
    for (Py_ssize_t w = 0; out != NULL && w < words; w++) {
        uint64_t word;
        memcpy(&word, data + 8 * w, 8);
        if ((word & HIGH) != THREES || ((word + SIXES) & HIGH) != THREES)
            continue;
        Py_ssize_t start = 8 * w, end = 8 * w + 8;
        while (start > 0 && is_digit(data[start - 1]))
            start--;
        while (end < n && is_digit(data[end]))
            end++;
        if (end - start >= 19) {
            PyObject *run = Py_BuildValue("(nn)", start, end);
            if (run == NULL || PyList_Append(out, run) < 0)
                Py_CLEAR(out);
            Py_XDECREF(run);
        }
        w = end / 8; /* (the word holding `end` is not all digits: the loop's w++ passes it) */
    }
    PyBuffer_Release(&view);
    return out;
}

/* innermost(value, levels): value[0][0]...[0] (`levels` times) when each of those levels is a list of
   exactly one item, else None. source.DepthProbe's check of a piece parsed inside its ~767 wrapper
   lists: in Python that walk cost ~0.12 ms a piece, ~26 ms over the 213 pieces of a 112 MB trace. */
static PyObject *innermost(PyObject *self, PyObject *args) {
    PyObject *value;
    Py_ssize_t levels;
    if (!PyArg_ParseTuple(args, "On", &value, &levels))
        return NULL;
    for (Py_ssize_t k = 0; k < levels; k++) {
        if (!PyList_CheckExact(value) || PyList_GET_SIZE(value) != 1)
            Py_RETURN_NONE;
        value = PyList_GET_ITEM(value, 0);
    }
    Py_INCREF(value);
    return value;
}

static PyMethodDef methods[] = {
    {"long_digit_runs", long_digit_runs, METH_VARARGS,
     "long_digit_runs(text): (start, end) of every maximal run of 19 or more ASCII digits."},
    {"innermost", innermost, METH_VARARGS,
     "innermost(value, levels): the value inside `levels` one-item lists, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_crawcheck", NULL, -1, methods};

PyMODINIT_FUNC PyInit__crawcheck(void) { return PyModule_Create(&module); }
