/* What the overlap split and the flow binding ask of the scan's int64 columns, compiled: which threads'
   X events do not all nest (prepare._split_overlaps), which slices begin on the same thread at the same
   instant (TraceScan.shared_begins), and which begin at given (thread, instant) points
   (flows._begins_from_scan).

   Each is a sort of the columns by thread and time and a walk over the result, which numpy does as well;
   this does it without numpy, so that the loader child, which forks before numpy is imported, never
   imports it (~58 ms on the way to the engine's first piece) on a trace that needs no overlap lane. The
   Python callers keep the numpy form for columns of another type (a time beyond int64) and for builds
   without a C compiler (pyproject's ext-modules: optional); tests/test_overlaps_compiled.py holds the two
   to the same answers. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_capi.h"

static int is_int64_format(const char *f) {
    if (f == NULL)
        return 0;
    if (*f == '@' || *f == '=' || *f == '<')
        f++;
    return (f[0] == 'l' || f[0] == 'q') && f[1] == '\0';
}

/* The int64 columns `arrays`, all of one length (*n); -1 (an error set) otherwise, with nothing held. */
static int int64_columns(PyObject *const arrays[], Py_buffer views[], int count, Py_ssize_t *n) {
    for (int k = 0; k < count; k++) {
        if (PyObject_GetBuffer(arrays[k], &views[k], PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            while (k--)
                PyBuffer_Release(&views[k]);
            return -1;
        }
        int typed = views[k].itemsize == 8 && views[k].ndim == 1 && is_int64_format(views[k].format);
        if (!typed || (k && views[k].len != views[0].len)) {
            if (!typed)
                PyErr_SetString(PyExc_TypeError, "an int64 column is needed");
            else
                PyErr_SetString(PyExc_ValueError, "the columns differ in length");
            for (; k >= 0; k--)
                PyBuffer_Release(&views[k]);
            return -1;
        }
    }
    *n = count ? views[0].len / 8 : 0;
    return 0;
}

/* The call's `count` arguments (and `extra` more, not columns) as int64 columns of one length. */
static int column_arguments(PyObject *args, int count, int extra, Py_buffer views[], Py_ssize_t *n) {
    if (PyTuple_GET_SIZE(args) != count + extra) {
        PyErr_Format(PyExc_TypeError, "%d arguments are needed", count + extra);
        return -1;
    }
    return int64_columns(PySequence_Fast_ITEMS(args), views, count, n);
}

static void release(Py_buffer views[], int count) {
    for (int k = 0; k < count; k++)
        PyBuffer_Release(&views[k]);
}

/* One slice-pushing event in lane order: by thread, start, longer first (-dur), then file order. */
typedef struct {
    int64_t track, ts, negdur, index;
} row;

static int by_lane_order(const void *a, const void *b) {
    const row *x = a, *y = b;
    if (x->track != y->track)
        return x->track < y->track ? -1 : 1;
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    if (x->negdur != y->negdur)
        return x->negdur < y->negdur ? -1 : 1;
    return x->index < y->index ? -1 : (x->index > y->index);
}

/* The end of the run of rows in lane order that begins at `first` (rows[first..end-1]). */
static Py_ssize_t run_end(const row *rows, Py_ssize_t first, Py_ssize_t n) {
    Py_ssize_t end = first + 1;
    while (end < n && by_lane_order(&rows[end - 1], &rows[end]) <= 0)
        end++;
    return end;
}

/* Sorts rows[0..n-1] (one thread's, in file order) in lane order, with `spare` room for n rows: a merge
   sort of the runs already in order. Kineto writes a thread as a few long runs in time order
   (hta_trace_diff_control's three largest threads: 5, 4 and 4 runs, rows up to 28k places out of
   order), so two or three merge passes sort it; rows in no order at all take log2(n) passes. */
static void sort_thread(row *rows, Py_ssize_t n, row *spare) {
    row *from = rows, *to = spare;
    while (n > 0 && run_end(from, 0, n) < n) {
        for (Py_ssize_t first = 0; first < n;) {
            Py_ssize_t middle = run_end(from, first, n), end = middle < n ? run_end(from, middle, n) : n;
            Py_ssize_t a = first, b = middle, k = first;
            while (a < middle && b < end)
                to[k++] = by_lane_order(&from[b], &from[a]) < 0 ? from[b++] : from[a++];
            memcpy(to + k, from + a, (size_t)(middle - a) * sizeof(row));
            k += middle - a;
            memcpy(to + k, from + b, (size_t)(end - b) * sizeof(row));
            first = end;
        }
        row *swap = from;
        from = to;
        to = swap;
    }
    if (from != rows)
        memcpy(rows, from, (size_t)n * sizeof(row));
}

/* The rows (track[k], ts[k], negdur ? negdur[k] : 0, index[k]) for every k with keep[k] (all when NULL),
   sorted in lane order into a new array of *count rows; NULL (an error set) when memory is short. Each
   row is put straight in its thread's place (a counting sort on the track number, which the scan numbers
   0, 1, 2... in order of appearance), then each thread is sorted (sort_thread). */
static row *sorted_rows(const int64_t *index, const int64_t *track, const int64_t *ts, const int64_t *negdur,
                        const int64_t *keep, Py_ssize_t n, Py_ssize_t *count) {
    Py_ssize_t m = 0, tracks = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        if (keep != NULL && !keep[k])
            continue;
        m++;
        if (track[k] < 0 || track[k] >= n)
            tracks = -1; /* (not the scan's numbering: one sort of every row) */
        else if (tracks >= 0 && track[k] >= tracks)
            tracks = track[k] + 1;
    }
    row *rows = PyMem_Malloc((size_t)(m > 0 ? m : 1) * sizeof(row));
    Py_ssize_t *starts = tracks > 0 ? PyMem_Calloc((size_t)tracks + 1, sizeof(Py_ssize_t)) : NULL;
    if (rows == NULL || (tracks > 0 && starts == NULL)) {
        PyMem_Free(rows);
        PyMem_Free(starts);
        PyErr_NoMemory();
        return NULL;
    }
    *count = m;
    if (starts == NULL) {
        Py_ssize_t at = 0;
        for (Py_ssize_t k = 0; k < n; k++)
            if (keep == NULL || keep[k])
                rows[at++] = (row){track[k], ts[k], negdur != NULL ? negdur[k] : 0, index[k]};
        qsort(rows, (size_t)m, sizeof(row), by_lane_order);
        return rows;
    }
    for (Py_ssize_t k = 0; k < n; k++)
        if (keep == NULL || keep[k])
            starts[track[k] + 1]++;
    for (Py_ssize_t t = 0; t < tracks; t++)
        starts[t + 1] += starts[t];
    for (Py_ssize_t k = 0; k < n; k++) /* (starts[t] ends as the start of thread t + 1) */
        if (keep == NULL || keep[k])
            rows[starts[track[k]]++] = (row){track[k], ts[k], negdur != NULL ? negdur[k] : 0, index[k]};
    Py_ssize_t largest = 0;
    for (Py_ssize_t t = 0, first = 0; t < tracks; first = starts[t++])
        if (starts[t] - first > largest && run_end(rows, first, starts[t]) < starts[t])
            largest = starts[t] - first; /* (only a thread out of order needs the spare room) */
    row *spare = largest ? PyMem_Malloc((size_t)largest * sizeof(row)) : NULL;
    if (largest && spare == NULL) {
        PyMem_Free(rows);
        PyMem_Free(starts);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t t = 0, first = 0; t < tracks; first = starts[t++])
        sort_thread(rows + first, starts[t] - first, spare);
    PyMem_Free(spare);
    PyMem_Free(starts);
    return rows;
}

/* The call's `count` int64 column arguments (index, track, ts[, negdur, placed]) as rows in lane order
   (sorted_rows), the columns held in `views`; NULL (an error set, nothing held) on failure. */
static row *sorted_arguments(PyObject *args, int count, Py_buffer views[], Py_ssize_t *m) {
    Py_ssize_t n;
    if (column_arguments(args, count, 0, views, &n) < 0)
        return NULL;
    row *rows = sorted_rows(views[0].buf, views[1].buf, views[2].buf, count > 3 ? views[3].buf : NULL,
                            count > 4 ? views[4].buf : NULL, n, m);
    if (rows == NULL)
        release(views, count);
    return rows;
}

/* prepare._nests over rows first..stop-1 of one thread; `stack` has room for them. */
static int thread_nests(const row *rows, Py_ssize_t first, Py_ssize_t stop, int64_t *stack) {
    Py_ssize_t depth = 0;
    for (Py_ssize_t i = first; i < stop; i++) {
        int64_t end = rows[i].ts - rows[i].negdur;
        while (depth && stack[depth - 1] <= rows[i].ts)
            depth--;
        if (depth && end > stack[depth - 1])
            return 0;
        stack[depth++] = end;
    }
    return 1;
}

/* A new tuple of `count` int64 values; NULL (an error set) on failure. */
static PyObject *int_tuple(const int64_t *values, int count) {
    PyObject *t = PyTuple_New(count);
    for (int k = 0; t != NULL && k < count; k++) {
        PyObject *v = PyLong_FromLongLong(values[k]);
        if (v == NULL)
            Py_CLEAR(t);
        else
            PyTuple_SET_ITEM(t, k, v);
    }
    return t;
}

/* The lane packing's input for one thread: (its lowest event index, track, [(ts, negdur, index), ...]). */
static PyObject *thread_items(const row *rows, Py_ssize_t first, Py_ssize_t stop) {
    PyObject *items = PyList_New(stop - first);
    int64_t head[2] = {rows[first].index, rows[first].track};
    for (Py_ssize_t i = first; items != NULL && i < stop; i++) {
        int64_t values[3] = {rows[i].ts, rows[i].negdur, rows[i].index};
        PyObject *item = int_tuple(values, 3);
        if (item == NULL)
            Py_CLEAR(items);
        else
            PyList_SET_ITEM(items, i - first, item);
        if (rows[i].index < head[0])
            head[0] = rows[i].index;
    }
    PyObject *thread = items != NULL ? int_tuple(head, 2) : NULL;
    if (thread != NULL && _PyTuple_Resize(&thread, 3) == 0) {
        PyTuple_SET_ITEM(thread, 2, items);
        return thread;
    }
    Py_XDECREF(items);
    return NULL;
}

/* unnested(index, track, ts, negdur, placed) -> [(first index, track, [(ts, negdur, index), ...]), ...]:
   for each thread whose placed events (placed != 0) do not all nest, its lowest event index, its track
   number and its placed events in lane order; threads in track order. */
static PyObject *unnested(PyObject *self, PyObject *args) {
    Py_buffer views[5];
    Py_ssize_t m;
    row *rows = sorted_arguments(args, 5, views, &m);
    if (rows == NULL)
        return NULL;
    int64_t *stack = PyMem_Malloc((size_t)(m > 0 ? m : 1) * sizeof(int64_t));
    PyObject *out = stack != NULL ? PyList_New(0) : PyErr_NoMemory();
    for (Py_ssize_t first = 0, stop; out != NULL && first < m; first = stop) {
        for (stop = first + 1; stop < m && rows[stop].track == rows[first].track; stop++)
            ;
        if (thread_nests(rows, first, stop, stack))
            continue;
        PyObject *thread = thread_items(rows, first, stop);
        if (thread == NULL || PyList_Append(out, thread) < 0)
            Py_CLEAR(out);
        Py_XDECREF(thread);
    }
    PyMem_Free(rows);
    PyMem_Free(stack);
    release(views, 5);
    return out;
}

/* shared_begins(index, track, ts) -> [index, ...]: the events that begin on the same thread at the same
   instant as another one, in no particular order. */
static PyObject *shared_begins(PyObject *self, PyObject *args) {
    Py_buffer views[3];
    Py_ssize_t m;
    row *rows = sorted_arguments(args, 3, views, &m);
    if (rows == NULL)
        return NULL;
    PyObject *out = PyList_New(0);
    for (Py_ssize_t k = 0; out != NULL && k < m; k++) {
        int same_before = k > 0 && rows[k - 1].track == rows[k].track && rows[k - 1].ts == rows[k].ts;
        int same_after = k + 1 < m && rows[k + 1].track == rows[k].track && rows[k + 1].ts == rows[k].ts;
        if (!same_before && !same_after)
            continue;
        PyObject *index = PyLong_FromLongLong(rows[k].index);
        if (index == NULL || PyList_Append(out, index) < 0)
            Py_CLEAR(out);
        Py_XDECREF(index);
    }
    PyMem_Free(rows);
    release(views, 3);
    return out;
}

static int by_value(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : (x > y);
}

/* begins_at(index, track, ts, points) -> [(index, track, ts), ...]: the events (in column order) whose
   (track, ts) is in the set `points` of (int, int) tuples; None when a point's time is not an int64 (no
   column value can equal it, but the Python form decides). */
static PyObject *begins_at(PyObject *self, PyObject *args) {
    Py_buffer views[3];
    Py_ssize_t n, count = 0;
    if (column_arguments(args, 3, 1, views, &n) < 0)
        return NULL;
    PyObject *points = PyTuple_GET_ITEM(args, 3);
    if (!PySet_Check(points)) {
        release(views, 3);
        PyErr_SetString(PyExc_TypeError, "the points are a set");
        return NULL;
    }
    const int64_t *index = views[0].buf, *track = views[1].buf, *ts = views[2].buf;
    PyObject *out = NULL, *point;
    int64_t *times = PyMem_Malloc((size_t)(PySet_GET_SIZE(points) + 1) * sizeof(int64_t));
    if (times == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject *iterator = PyObject_GetIter(points);
    while (iterator != NULL && (point = PyIter_Next(iterator)) != NULL) {
        PyObject *time = PyTuple_CheckExact(point) && PyTuple_GET_SIZE(point) == 2 ? PyTuple_GET_ITEM(point, 1) : NULL;
        int fits = time != NULL && exact_int64(time, &times[count]);
        Py_DECREF(point);
        if (!fits) {
            Py_DECREF(iterator);
            out = Py_None;
            Py_INCREF(out);
            goto done;
        }
        count++;
    }
    Py_XDECREF(iterator);
    if (PyErr_Occurred())
        goto done;
    qsort(times, (size_t)count, sizeof(int64_t), by_value);
    out = PyList_New(0);
    for (Py_ssize_t k = 0; out != NULL && k < n; k++) {
        if (bsearch(&ts[k], times, (size_t)count, sizeof(int64_t), by_value) == NULL)
            continue;
        int64_t values[3] = {index[k], track[k], ts[k]};
        PyObject *found = int_tuple(values, 3), *key = NULL;
        int hit = -1;
        if (found != NULL && (key = PyTuple_GetSlice(found, 1, 3)) != NULL)
            hit = PySet_Contains(points, key);
        if (hit < 0 || (hit && PyList_Append(out, found) < 0))
            Py_CLEAR(out);
        Py_XDECREF(key);
        Py_XDECREF(found);
    }
done:
    PyMem_Free(times);
    release(views, 3);
    return out;
}

static PyMethodDef methods[] = {
    {"unnested", unnested, METH_VARARGS,
     "unnested(index, track, ts, negdur, placed): the threads whose placed X events do not all nest."},
    {"shared_begins", shared_begins, METH_VARARGS,
     "shared_begins(index, track, ts): the events that begin on a thread at the same instant as another."},
    {"begins_at", begins_at, METH_VARARGS, "begins_at(index, track, ts, points): the events at (track, ts) points."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_coverlaps", NULL, -1, methods};

PyMODINIT_FUNC PyInit__coverlaps(void) { return PyModule_Create(&module); }
