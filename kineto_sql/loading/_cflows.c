/* flows.bind_flows's three loops over every flow event (and its list surgery), compiled: the same results
   in about a fifth of the time.

   On hta_trace_diff_control (34k flow events) the Python loops take ~80 ms of the ~82 ms bind_flows
   costs when few flows are at risk: grouping the events by arrow (~28 ms), counting half arrows and
   ends written before their start (~19 ms), and finding each event's intended slice (~33 ms). Every
   step here is the C API call of its Python statement (dict lookups, tuple keys, rich comparisons), so
   the results are the same objects in the same order.
   - summary() counts the half arrows and the late ends of every arrow in one pass over a C table, and
     builds only the arrows bind_flows asked for (flows._arrows and _halves_and_reorder in one, ~half the
     time the two took compiled); it returns None for anything outside the shapes validate leaves (an
     event that is not a dict, a ph that is not a one-letter str, a flow without id), and the caller runs
     those two Python loops, which define the behaviour (and say any error in their words);
   - intended() does the common case inline (an int id, one slice with that correlation beginning at
     the flow's time) and hands every other flow event, in order, to the Python rule (`one`).
   Built when a C compiler is there (pyproject's ext-modules, optional); flows.py falls back without it. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "_capi.h"

static PyObject *K_ID, *K_CAT, *K_NAME, *K_PH, *K_BP, *S_F, *S_E;

/* list[index] for a Python int index into a list, borrowed; NULL (no error set) when out of range or
   not an exact int list position. */
static PyObject *item_at(PyObject *list, PyObject *index) {
    if (!PyLong_CheckExact(index))
        return NULL;
    Py_ssize_t i = PyLong_AsSsize_t(index);
    if (i == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return NULL;
    }
    if (i < 0 || i >= PyList_GET_SIZE(list))
        return NULL;
    return PyList_GET_ITEM(list, i);
}

/* The one-letter ph of events[j] ('s', 't', 'f', ...), or 0 when it is anything else. */
static Py_UCS4 phase_of(PyObject *events, PyObject *j) {
    PyObject *e = item_at(events, j);
    if (e == NULL || !PyDict_CheckExact(e))
        return 0;
    PyObject *ph = PyDict_GetItemWithError(e, K_PH);
    if (ph == NULL || !PyUnicode_CheckExact(ph) || PyUnicode_GET_LENGTH(ph) != 1) {
        PyErr_Clear();
        return 0;
    }
    return PyUnicode_READ_CHAR(ph, 0);
}

/* What summary() reads of flow event j (an index in flow_indices): its arrow key's three objects,
   borrowed, into key[0..2] (id, cat, name). KEY_READ; KEY_NO_TS for an event without a timestamp (not
   in any arrow); KEY_FALLBACK where the Python loop must run (not a dict, no id: it raises its KeyError);
   KEY_ERROR with an error set. */
enum { KEY_ERROR = -1, KEY_READ = 0, KEY_NO_TS = 1, KEY_FALLBACK = 2 };

static int arrow_key(PyObject *events, PyObject *ts_ns, PyObject *j, PyObject *key[3]) {
    PyObject *ts = item_at(ts_ns, j), *e = item_at(events, j);
    if (ts == NULL || e == NULL || !PyDict_CheckExact(e))
        return KEY_FALLBACK;
    if (ts == Py_None)
        return KEY_NO_TS;
    key[0] = PyDict_GetItemWithError(e, K_ID);
    if (key[0] == NULL)
        return PyErr_Occurred() ? KEY_ERROR : KEY_FALLBACK;
    key[1] = get_or_none(e, K_CAT);
    key[2] = key[1] ? get_or_none(e, K_NAME) : NULL;
    return key[2] == NULL ? KEY_ERROR : KEY_READ;
}

/* (ts_ns[a], a) < (ts_ns[b], b): 1, 0, or -1 on error. */
static int sorts_before(PyObject *ts_ns, PyObject *a, PyObject *b) {
    PyObject *ta = item_at(ts_ns, a), *tb = item_at(ts_ns, b);
    if (ta == NULL || tb == NULL) {
        PyErr_SetString(PyExc_IndexError, "flow event index outside ts_ns");
        return -1;
    }
    int same = PyObject_RichCompareBool(ta, tb, Py_EQ);
    if (same < 0)
        return -1;
    if (!same)
        return PyObject_RichCompareBool(ta, tb, Py_LT);
    return PyObject_RichCompareBool(a, b, Py_LT);
}

/* One arrow of summary()'s table: its key's three objects (borrowed: the events hold them), their hash,
   how many members, starts and ends it has, and its first start and end (borrowed from flow_indices). */
typedef struct {
    PyObject *id, *cat, *name, *start, *end;
    Py_hash_t hash;
    Py_ssize_t members, starts, ends;
    PyObject *listed; /* its members, for an arrow whose id was asked for (a new reference), else NULL */
} arrow;

/* Where the arrow keyed (id, cat, name) is: its index in `arrows`, or, when it is not there yet, -2 - the
   slot of `slots` (an open-addressing table of `mask` + 1 indices, a power of two, never full, -1 empty)
   where its index goes; -1 on an error. Keys compare as the dict of _arrows compares its tuple keys: the
   hash, then each item by identity or ==. */
static Py_ssize_t find_arrow(const arrow *arrows, const int32_t *slots, size_t mask, Py_hash_t hash, PyObject *id,
                             PyObject *cat, PyObject *name) {
    for (size_t at = (size_t)hash & mask;; at = (at + 1) & mask) {
        if (slots[at] < 0)
            return -2 - (Py_ssize_t)at;
        const arrow *a = &arrows[slots[at]];
        if (a->hash != hash)
            continue;
        PyObject *mine[3] = {a->id, a->cat, a->name}, *theirs[3] = {id, cat, name};
        int same = 1;
        for (int k = 0; k < 3 && same == 1; k++)
            same = mine[k] == theirs[k] ? 1 : PyObject_RichCompareBool(mine[k], theirs[k], Py_EQ);
        if (same < 0)
            return -1;
        if (same)
            return slots[at];
    }
}

/* summary(events, flow_indices, ts_ns, ids) -> (halves, reorder, some): flows._halves_and_reorder(events,
   flows._arrows(events, flow_indices, ts_ns), ts_ns), and `some` the entries of those arrows whose id is
   in `ids` (in the same order), or None for events of another shape (the caller then runs those two).
   The arrows are counted in a C table instead of a dict of tuple keys holding lists, and only those of the
   ids asked for are built: on hta_trace_diff_control's 4x replica the two build ~99k tuples, lists and
   dict entries, ~100 ms, to count what one pass counts here (~48 ms), for the few arrows bind_flows
   rewrites. */
static PyObject *summary(PyObject *self, PyObject *args) {
    PyObject *events, *flow_indices, *ts_ns, *ids;
    if (!PyArg_ParseTuple(args, "O!O!O!O!", &PyList_Type, &events, &PyList_Type, &flow_indices, &PyList_Type, &ts_ns,
                          &PySet_Type, &ids))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(flow_indices);
    if (n >= INT32_MAX / 2)
        Py_RETURN_NONE;
    size_t size = 16;
    while (size < 2 * (size_t)n + 2)
        size *= 2;
    int32_t *slots = PyMem_Malloc(size * sizeof(int32_t));
    arrow *table = PyMem_Malloc(((size_t)n + 1) * sizeof(arrow));
    PyObject *result = NULL, *reorder = NULL, *some = NULL;
    Py_ssize_t used = 0;
    if (slots == NULL || table == NULL) {
        PyErr_NoMemory();
        goto out;
    }
    memset(slots, 0xff, size * sizeof(int32_t));
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *j = PyList_GET_ITEM(flow_indices, k), *read[3];
        int got = arrow_key(events, ts_ns, j, read);
        if (got == KEY_NO_TS)
            continue;
        if (got != KEY_READ) {
            if (got == KEY_ERROR)
                goto out;
            goto fallback;
        }
        PyObject *id = read[0], *cat = read[1], *name = read[2];
        Py_UCS4 ph = phase_of(events, j);
        if (ph == 0)
            goto fallback; /* (the Python loops say what is wrong with it, or give its answer) */
        Py_hash_t parts[3] = {PyObject_Hash(id), PyObject_Hash(cat), PyObject_Hash(name)};
        if (parts[0] == -1 || parts[1] == -1 || parts[2] == -1)
            goto out;
        Py_uhash_t mixed = (Py_uhash_t)parts[0] * 1000003u ^ (Py_uhash_t)parts[1] * 31u ^ (Py_uhash_t)parts[2];
        Py_hash_t hash = (Py_hash_t)mixed; /* (unsigned: an overflowing product wraps instead of being undefined) */
        Py_ssize_t at = find_arrow(table, slots, size - 1, hash, id, cat, name);
        if (at == -1)
            goto out;
        if (at < -1) {
            int wanted = PySet_Contains(ids, id);
            if (wanted < 0)
                goto out;
            slots[-2 - at] = (int32_t)used;
            table[used] = (arrow){id, cat, name, NULL, NULL, hash, 0, 0, 0, NULL};
            at = used++;
            if (wanted && (table[at].listed = PyList_New(0)) == NULL)
                goto out;
        }
        arrow *a = &table[at];
        if (a->listed != NULL && PyList_Append(a->listed, j) < 0)
            goto out;
        a->members++;
        if (ph == 's' && a->starts++ == 0)
            a->start = j;
        else if (ph == 'f' && a->ends++ == 0)
            a->end = j;
    }
    if ((reorder = PySet_New(NULL)) == NULL || (some = PyDict_New()) == NULL)
        goto out;
    Py_ssize_t halves = 0;
    for (Py_ssize_t at = 0; at < used; at++) {
        arrow *a = &table[at];
        if (a->listed != NULL) {
            PyObject *key = PyTuple_Pack(3, a->id, a->cat, a->name);
            int rc = key == NULL ? -1 : PyDict_SetItem(some, key, a->listed);
            Py_XDECREF(key);
            if (rc < 0)
                goto out;
        }
        if (a->members == 1) { /* half an arrow: the common case on GPU traces (flow ends without starts) */
            halves++;
            continue;
        }
        if (a->starts == 1 && a->ends == 1) {
            int before = sorts_before(ts_ns, a->end, a->start);
            if (before < 0 || (before && PySet_Add(reorder, a->end) < 0))
                goto out;
        }
        if (a->starts == 0 || a->ends == 0)
            halves += a->members;
    }
    result = Py_BuildValue("(nOO)", halves, reorder, some);
    goto out;
fallback:
    result = Py_None;
    Py_INCREF(result);
out:
    Py_XDECREF(reorder);
    Py_XDECREF(some);
    for (Py_ssize_t at = 0; at < used; at++)
        Py_XDECREF(table[at].listed);
    PyMem_Free(slots);
    PyMem_Free(table);
    return result;
}

/* intended(events, flow_indices, flow_tracks, ts_ns, by_correlation, moved, shared, intended_of, at_risk,
   one) -> None: fills intended_of and at_risk as flows._intended_and_at_risk's loop does. */
static PyObject *intended(PyObject *self, PyObject *args) {
    PyObject *events, *flow_indices, *flow_tracks, *ts_ns, *by_correlation, *moved, *shared, *intended_of;
    PyObject *at_risk, *one;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!OOO!O!O", &PyList_Type, &events, &PyList_Type, &flow_indices,
                          &PyList_Type, &flow_tracks, &PyList_Type, &ts_ns, &PyDict_Type, &by_correlation,
                          &moved, &shared, &PyDict_Type, &intended_of, &PyList_Type, &at_risk, &one))
        return NULL;
    if (PyList_GET_SIZE(flow_tracks) != PyList_GET_SIZE(flow_indices)) {
        PyErr_SetString(PyExc_ValueError, "flow_indices and flow_tracks differ in length");
        return NULL;
    }
    PyObject *shared_set = NULL;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(flow_indices); k++) {
        PyObject *j = PyList_GET_ITEM(flow_indices, k), *track = PyList_GET_ITEM(flow_tracks, k);
        PyObject *ts = item_at(ts_ns, j), *e = item_at(events, j);
        if (ts == Py_None)
            continue;
        PyObject *candidates = NULL, *flow_id = NULL;
        if (ts != NULL && e != NULL && PyDict_CheckExact(e)) {
            flow_id = PyDict_GetItemWithError(e, K_ID);
            if (flow_id == NULL && PyErr_Occurred())
                goto error;
        }
        if (flow_id != NULL && PyLong_CheckExact(flow_id)) {
            PyObject *point = PyTuple_Pack(2, track, flow_id);
            if (point == NULL)
                goto error;
            candidates = PyDict_GetItemWithError(by_correlation, point);
            Py_DECREF(point);
            if (candidates == NULL) {
                if (PyErr_Occurred())
                    goto error;
                continue; /* no slice carries this correlation */
            }
        }
        PyObject *starts_at = candidates != NULL ? item_at(ts_ns, candidates) : NULL;
        int common = 0;
        if (starts_at != NULL) {
            common = PyObject_RichCompareBool(starts_at, ts, Py_EQ);
            if (common < 0)
                goto error;
        }
        if (!common) { /* every other case: the rule itself */
            PyObject *done = PyObject_CallFunctionObjArgs(one, j, track, NULL);
            if (done == NULL)
                goto error;
            Py_DECREF(done);
            continue;
        }
        if (PyDict_SetItem(intended_of, j, candidates) < 0)
            goto error;
        if (shared_set == NULL && (shared_set = PyObject_CallNoArgs(shared)) == NULL)
            goto error;
        int risk = PySequence_Contains(shared_set, candidates);
        if (risk == 0)
            risk = PySequence_Contains(moved, candidates);
        if (risk == 0) { /* not (ph != "f" or bp == "e") */
            PyObject *ph = PyDict_GetItemWithError(e, K_PH), *bp = ph ? get_or_none(e, K_BP) : NULL;
            if (bp == NULL) {
                if (!PyErr_Occurred())
                    PyErr_SetObject(PyExc_KeyError, K_PH);
                goto error;
            }
            int not_f = PyObject_RichCompareBool(ph, S_F, Py_NE);
            int bp_e = not_f == 0 ? PyObject_RichCompareBool(bp, S_E, Py_EQ) : 0;
            if (not_f < 0 || bp_e < 0)
                goto error;
            risk = !(not_f || bp_e);
        }
        if (risk < 0 || (risk && PyList_Append(at_risk, j) < 0))
            goto error;
    }
    Py_XDECREF(shared_set);
    Py_RETURN_NONE;
error:
    Py_XDECREF(shared_set);
    return NULL;
}

/* move_to_end(events, removed, tail) -> None: events[:] = [e for i, e in enumerate(events) if i not in
   removed] + [events[i] for i in tail], in place. `removed` is a sorted list of distinct indices, `tail`
   a sorted sublist of it. The kept events' pointers only move down the list's array, so no event's
   reference count is touched (rebuilding the list in Python increfs and decrefs every event several
   times: ~29 ms on hta_trace_diff_control's 4x replica, all cache misses, for a few hundred removals). */
static PyObject *move_to_end(PyObject *self, PyObject *args) {
    PyObject *events, *removed, *tail;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyList_Type, &events, &PyList_Type, &removed, &PyList_Type, &tail))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(events), r = PyList_GET_SIZE(removed), t = PyList_GET_SIZE(tail);
    Py_ssize_t *drop = PyMem_New(Py_ssize_t, r + 1), *late = PyMem_New(Py_ssize_t, t + 1);
    PyObject **moved = PyMem_New(PyObject *, t + 1), *result = NULL;
    if (drop == NULL || late == NULL || moved == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* the indices, checked before anything moves: sorted, distinct, in range, tail within removed */
    const char *bad = NULL;
    for (Py_ssize_t k = 0; k < r && bad == NULL; k++) {
        drop[k] = PyLong_AsSsize_t(PyList_GET_ITEM(removed, k));
        if (drop[k] == -1 && PyErr_Occurred())
            bad = "";
        else if (drop[k] < 0 || drop[k] >= n || (k && drop[k] <= drop[k - 1]))
            bad = "removed must hold sorted, distinct indices of events";
    }
    for (Py_ssize_t k = 0, at = 0; k < t && bad == NULL; k++) {
        late[k] = PyLong_AsSsize_t(PyList_GET_ITEM(tail, k));
        if (late[k] == -1 && PyErr_Occurred()) {
            bad = "";
            break;
        }
        while (at < r && drop[at] < late[k])
            at++;
        if (at == r || drop[at] != late[k] || (k && late[k] <= late[k - 1]))
            bad = "tail must be a sorted sublist of removed";
    }
    if (bad != NULL) {
        if (*bad)
            PyErr_SetString(PyExc_ValueError, bad);
        goto done;
    }
    PyObject **item = ((PyListObject *)events)->ob_item;
    for (Py_ssize_t k = 0; k < t; k++)
        moved[k] = item[late[k]]; /* (the list's reference, carried to the end) */
    Py_ssize_t write = 0, next = 0, next_late = 0;
    for (Py_ssize_t read = 0; read < n; read++) {
        if (next < r && drop[next] == read) {
            next++;
            if (next_late < t && late[next_late] == read)
                next_late++;
            else
                Py_DECREF(item[read]);
            continue;
        }
        item[write++] = item[read];
    }
    for (Py_ssize_t k = 0; k < t; k++)
        item[write++] = moved[k];
    Py_SET_SIZE(events, write); /* (the array keeps its allocation; only the end shrank) */
    Py_INCREF(Py_None);
    result = Py_None;
done:
    PyMem_Free(drop);
    PyMem_Free(late);
    PyMem_Free(moved);
    return result;
}

static const char *const KEY_NAMES[] = {"id", "cat", "name", "ph", "bp"};
static PyObject **const KEYS[] = {&K_ID, &K_CAT, &K_NAME, &K_PH, &K_BP};
USE_KEYS_METHOD

static PyMethodDef methods[] = {
    USE_KEYS_ENTRY,
    {"intended", intended, METH_VARARGS,
     "intended(events, flow_indices, flow_tracks, ts_ns, by_correlation, moved, shared, intended_of, at_risk, "
     "one): flows._intended_and_at_risk's loop."},
    {"summary", summary, METH_VARARGS,
     "summary(events, flow_indices, ts_ns, ids): (halves, reorder, the arrows of ids), or None."},
    {"move_to_end", move_to_end, METH_VARARGS,
     "move_to_end(events, removed, tail): drops the removed events but those of tail, which go last, in place."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cflows", NULL, -1, methods};

PyMODINIT_FUNC PyInit__cflows(void) {
    static const char *const values[] = {"f", "e"};
    static PyObject **const value_strings[] = {&S_F, &S_E};
    if (intern_keys(KEY_NAMES, KEYS, 5) < 0 || intern_keys(values, value_strings, 2) < 0)
        return NULL;
    return PyModule_Create(&module);
}
