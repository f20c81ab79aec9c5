/* scan.scan_events's loop, compiled: the same columns from the same events, in about half the time.

   The loop reads six fields of every slice-pushing and flow event and appends them to flat lists: in
   Python ~100 ms for the 109k events of hta_trace_diff_control, here ~51 ms (what is left is mostly the
   walk over 109k dicts scattered in memory, which no compiled loop avoids). Every step is the C API
   call the Python statement makes (dict lookups, tuple keys, int multiplication, truthiness), so the
   results are the same objects in the same order. Anything outside the shapes validate leaves (an event
   that is not a dict, a ph or s that is not a str, args that are not a dict) returns None and the caller
   runs the Python loop, which defines the behaviour.
   Built when a C compiler is there (pyproject's ext-modules, optional); scan.py falls back without it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>

#include "_capi.h"

static PyTypeObject *ARGS_TEXT; /* _cargs.ArgsText: its correlation was read from its text */
static PyObject *K_PH, *K_PID, *K_TID, *K_TS, *K_DUR, *K_ARGS, *K_S, *K_CORR, *THOUSAND;

enum { NOT_PUSHING = 0, IS_X = 1, IS_FLOW = 2, IS_INSTANT = 3, FALLBACK = -1 };

/* ph (and s for instants) -> the kind of event; FALLBACK when a field is not a str. */
static int kind_of(PyObject *e) {
    PyObject *ph = PyDict_GetItemWithError(e, K_PH);
    if (ph == NULL || !PyUnicode_CheckExact(ph))
        return FALLBACK;
    if (PyUnicode_GET_LENGTH(ph) != 1)
        return NOT_PUSHING;
    Py_UCS4 c = PyUnicode_READ_CHAR(ph, 0);
    if (c == 'X')
        return IS_X;
    if (c == 's' || c == 't' || c == 'f')
        return IS_FLOW;
    if (c == 'i' || c == 'I') {
        PyObject *s = PyDict_GetItemWithError(e, K_S);
        if (s == NULL)
            return PyErr_Occurred() ? FALLBACK : IS_INSTANT; /* e.get("s", "t") */
        if (!PyUnicode_CheckExact(s))
            return FALLBACK;
        return PyUnicode_CompareWithASCIIString(s, "t") == 0 ? IS_INSTANT : NOT_PUSHING;
    }
    return NOT_PUSHING;
}

/* fast_ns(value), new reference: int * 1000, a finite float's floor(v * 1000 + 0.5), else the Python
   function's answer (numeric strings; None for the rest). */
static PyObject *to_ns(PyObject *value, PyObject *fast_ns) {
    if (PyLong_CheckExact(value))
        return PyNumber_Multiply(value, THOUSAND);
    if (PyFloat_CheckExact(value)) {
        double v = PyFloat_AS_DOUBLE(value);
        if (v - v == 0)
            return PyLong_FromDouble(floor(v * 1000 + 0.5));
        Py_RETURN_NONE;
    }
    return PyObject_CallOneArg(fast_ns, value);
}

/* The track number of (pid, tid), numbering new tracks in order of first appearance; new reference. */
static PyObject *track_number(PyObject *pid, PyObject *tid, PyObject *track_of, PyObject *numbers,
                              PyObject *tracks) {
    PyObject *raw_key = PyTuple_Pack(2, pid, tid), *track = NULL, *key = NULL;
    if (raw_key == NULL)
        return NULL;
    track = PyDict_GetItemWithError(track_of, raw_key);
    if (track != NULL) {
        Py_INCREF(track);
        goto done;
    }
    if (PyErr_Occurred())
        goto done;
    int tid_true = PyObject_IsTrue(tid), pid_true = PyObject_IsTrue(pid);
    if (tid_true < 0 || pid_true < 0)
        goto done;
    key = PyTuple_Pack(2, pid, (!tid_true && pid_true) ? pid : tid);
    if (key == NULL)
        goto done;
    track = PyDict_GetItemWithError(numbers, key);
    if (track != NULL) {
        Py_INCREF(track);
    } else if (!PyErr_Occurred()) {
        track = PyLong_FromSsize_t(PyList_GET_SIZE(tracks));
        if (track == NULL || PyDict_SetItem(numbers, key, track) < 0 || PyList_Append(tracks, key) < 0)
            Py_CLEAR(track);
    }
    if (track != NULL && PyDict_SetItem(track_of, raw_key, track) < 0)
        Py_CLEAR(track);
done:
    Py_XDECREF(key);
    Py_DECREF(raw_key);
    return track;
}

/* by_correlation[(track, corr)]: the event index, or the list of them when several have it. */
static int note_correlation(PyObject *by_correlation, PyObject *track, PyObject *corr, PyObject *index) {
    PyObject *point = PyTuple_Pack(2, track, corr);
    if (point == NULL)
        return -1;
    int rc = 0;
    PyObject *have = PyDict_GetItemWithError(by_correlation, point);
    if (have == NULL) {
        rc = PyErr_Occurred() ? -1 : PyDict_SetItem(by_correlation, point, index);
    } else if (PyList_CheckExact(have)) {
        rc = PyList_Append(have, index);
    } else {
        PyObject *both = PyList_New(2);
        if (both == NULL) {
            rc = -1;
        } else {
            Py_INCREF(have);
            Py_INCREF(index);
            PyList_SET_ITEM(both, 0, have);
            PyList_SET_ITEM(both, 1, index);
            rc = PyDict_SetItem(by_correlation, point, both);
            Py_DECREF(both);
        }
    }
    Py_DECREF(point);
    return rc;
}

/* A growing int64 column, handed to Python as a bytearray (numpy reads it in place). */
typedef struct {
    int64_t *v;
    Py_ssize_t n, cap;
} column;

static int push(column *c, int64_t x) {
    if (c->n == c->cap) {
        Py_ssize_t cap = c->cap ? 2 * c->cap : 4096;
        int64_t *v = PyMem_Realloc(c->v, (size_t)cap * sizeof(int64_t));
        if (v == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        c->v = v;
        c->cap = cap;
    }
    c->v[c->n++] = x;
    return 0;
}

static PyObject *bytes_of(const column *c) {
    return PyByteArray_FromStringAndSize((const char *)c->v, c->n * (Py_ssize_t)sizeof(int64_t));
}

/* scan(events, fast_ns) -> (tracks, track_of, ts_ns, p_index, p_track, p_ts, p_negdur, p_placed,
   by_correlation, flow_indices, flow_tracks): the p_ columns as int64 bytearrays (p_placed 0/1), the rest
   as the Python loop's lists and dicts; or None (run the Python loop). */
static PyObject *scan(PyObject *self, PyObject *args) {
    PyObject *events, *fast_ns;
    if (!PyArg_ParseTuple(args, "O!O", &PyList_Type, &events, &fast_ns))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(events);
    PyObject *tracks = PyList_New(0), *track_of = PyDict_New(), *numbers = PyDict_New();
    PyObject *ts_ns = PyList_New(n), *by_correlation = PyDict_New();
    PyObject *flow_indices = PyList_New(0), *flow_tracks = PyList_New(0);
    PyObject *result = NULL, *columns[5] = {NULL, NULL, NULL, NULL, NULL};
    column p_index = {0}, p_track = {0}, p_ts = {0}, p_negdur = {0}, p_placed = {0};
    /* The last event's pid and tid objects and their track: validate shares equal ids as one object, so an
       event of the same thread as the one before finds its track without a tuple or a dict lookup. */
    PyObject *last_pid = NULL, *last_tid = NULL, *last_track = NULL;
    int64_t last_track_number = 0;
    if (!tracks || !track_of || !numbers || !ts_ns || !by_correlation || !flow_indices || !flow_tracks)
        goto out;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_INCREF(Py_None);
        PyList_SET_ITEM(ts_ns, i, Py_None);
    }
    int fallback = 0;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(events) && !fallback; i++) {
        PyObject *e = PyList_GET_ITEM(events, i);
        if (!PyDict_CheckExact(e)) {
            fallback = 1;
            break;
        }
        int kind = kind_of(e);
        if (kind == FALLBACK) {
            if (PyErr_Occurred())
                goto out;
            fallback = 1;
            break;
        }
        if (kind == NOT_PUSHING)
            continue;
        PyObject *pid = get_or_none(e, K_PID), *tid = pid ? get_or_none(e, K_TID) : NULL;
        PyObject *ts_raw = tid ? get_or_none(e, K_TS) : NULL;
        if (ts_raw == NULL)
            goto out;
        if (last_track == NULL || pid != last_pid || tid != last_tid) {
            PyObject *track = track_number(pid, tid, track_of, numbers, tracks);
            if (track == NULL)
                goto out;
            Py_XSETREF(last_track, track);
            last_pid = pid; /* (borrowed: the events hold them for the whole scan) */
            last_tid = tid;
            last_track_number = PyLong_AsLongLong(track);
        }
        PyObject *track = last_track;
        PyObject *ts = to_ns(ts_raw, fast_ns);
        if (ts == NULL)
            goto out;
        PyList_SetItem(ts_ns, i, ts); /* steals the new reference; drops the None (ts stays alive there) */
        int64_t ts64 = 0, negdur = 0;
        int placed = 0, rc = 0, skip = 0;
        if (ts != Py_None && !exact_int64(ts, &ts64)) /* (the Python loop's column then holds objects) */
            fallback = 1;
        if (fallback)
            break;
        if (kind == IS_FLOW) {
            PyObject *index = PyLong_FromSsize_t(i);
            rc = index == NULL || PyList_Append(flow_indices, index) < 0 || PyList_Append(flow_tracks, track) < 0
                     ? -1 : 0;
            Py_XDECREF(index);
            skip = 1;
        } else if (kind == IS_X) {
            PyObject *event_args = get_or_none(e, K_ARGS);
            if (event_args == NULL) {
                rc = -1;
            } else if (Py_TYPE(event_args) == ARGS_TEXT) {
                PyObject *corr = ((ArgsText *)event_args)->correlation;
                if (corr != Py_None) {
                    PyObject *index = PyLong_FromSsize_t(i);
                    rc = index == NULL ? -1 : note_correlation(by_correlation, track, corr, index);
                    Py_XDECREF(index);
                }
            } else if (event_args != Py_None) {
                if (!PyDict_CheckExact(event_args)) {
                    fallback = 1;
                } else {
                    PyObject *corr = PyDict_GetItemWithError(event_args, K_CORR);
                    if (corr == NULL && PyErr_Occurred()) {
                        rc = -1;
                    } else if (corr != NULL && PyLong_Check(corr)) {
                        PyObject *index = PyLong_FromSsize_t(i);
                        rc = index == NULL ? -1 : note_correlation(by_correlation, track, corr, index);
                        Py_XDECREF(index);
                    }
                }
            }
            if (rc == 0 && !fallback) {
                if (ts == Py_None) {
                    skip = 1;
                } else {
                    PyObject *dur_raw = get_or_none(e, K_DUR), *dur = dur_raw ? to_ns(dur_raw, fast_ns) : NULL;
                    if (dur == NULL) {
                        rc = -1;
                    } else if (dur != Py_None) {
                        int64_t d;
                        if (!exact_int64(dur, &d) || d == INT64_MIN)
                            fallback = 1; /* -dur would not fit either */
                        negdur = -d;
                        placed = 1;
                    }
                    Py_XDECREF(dur);
                }
            }
        } else if (ts == Py_None) {
            skip = 1;
        }
        if (rc == 0 && !fallback && !skip)
            rc = (push(&p_index, i) < 0 || push(&p_track, last_track_number) < 0 || push(&p_ts, ts64) < 0 ||
                  push(&p_negdur, negdur) < 0 || push(&p_placed, placed) < 0) ? -1 : 0;
        if (rc < 0)
            goto out;
    }
    if (fallback) {
        result = Py_None;
        Py_INCREF(result);
        goto out;
    }
    const column *all[5] = {&p_index, &p_track, &p_ts, &p_negdur, &p_placed};
    for (int c = 0; c < 5; c++)
        if ((columns[c] = bytes_of(all[c])) == NULL)
            goto out;
    result = PyTuple_Pack(11, tracks, track_of, ts_ns, columns[0], columns[1], columns[2], columns[3], columns[4],
                          by_correlation, flow_indices, flow_tracks);
out:
    Py_XDECREF(tracks); Py_XDECREF(track_of); Py_XDECREF(numbers); Py_XDECREF(ts_ns);
    Py_XDECREF(by_correlation); Py_XDECREF(flow_indices); Py_XDECREF(flow_tracks); Py_XDECREF(last_track);
    for (int c = 0; c < 5; c++)
        Py_XDECREF(columns[c]);
    PyMem_Free(p_index.v); PyMem_Free(p_track.v); PyMem_Free(p_ts.v); PyMem_Free(p_negdur.v);
    PyMem_Free(p_placed.v);
    return result;
}

static const char *const KEY_NAMES[] = {"ph", "pid", "tid", "ts", "dur", "args", "s", "correlation"};
static PyObject **const KEYS[] = {&K_PH, &K_PID, &K_TID, &K_TS, &K_DUR, &K_ARGS, &K_S, &K_CORR};
USE_KEYS_METHOD

static PyMethodDef methods[] = {
    USE_KEYS_ENTRY,
    {"scan", scan, METH_VARARGS, "scan(events, fast_ns): scan.scan_events's columns, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cscan", NULL, -1, methods};

PyMODINIT_FUNC PyInit__cscan(void) {
    if (intern_keys(KEY_NAMES, KEYS, 8) < 0 || (THOUSAND = PyLong_FromLong(1000)) == NULL)
        return NULL;
    ARGS_TEXT = import_args_text();
    return PyModule_Create(&module);
}
