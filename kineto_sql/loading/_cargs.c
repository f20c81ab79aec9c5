/* Events' args kept as their text (loading.lazy_args): cut out of a piece of the event list before its parse,
   put back after it as ArgsText objects, written out as they were read.

   cut(piece) reads the piece's structure (strings, brackets, the keys of each event's own object) without
   parsing its values, and replaces each event's `"args": {...}` by `"args": N`, N the index of an ArgsText
   holding the object's text and its top-level "correlation" (an int, or None where it has none). An args
   object is left as it is, to be parsed as before, where:
   - a string in it holds an escape (the engine stores escapes undecoded, `\u00e9` as those six
     characters; parsed and written by orjson, it gets the character), which also covers a key written
     with an escape that may read "correlation";
   - its correlation is not a plain integer of at most 18 digits (a float, a string, true: what the scan
     does with those is left to the parsed value);
   - it nests deeper than MAX_DEPTH, or is shorter than any index.
   The whole piece is declined (None; the caller parses it as it is) where a placeholder could be taken
   for an args the file wrote as a number, where an event's key is written with an escape (it may read
   "args"), and where the piece is not one balanced run of values. put_back(events, cut_args) swaps the
   placeholders for the ArgsText objects after the parse. Each piece's cut texts are copied into one
   `[text,text,...]` buffer the ArgsText objects point into, which is checked as JSON later
   (lazy_args.Checks). Most of the text is in strings, skipped sixteen bytes at a time with SSE2. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

#include "_capi.h"

/* Kineto nests args two or three levels deep; deeper ones are parsed (and the depth probe bounds them). */
#define MAX_DEPTH 32
/* The shortest args text cut out: an index of up to 7 digits (a 512 KB piece holds fewer than 10^7
   events) then never makes the cut text longer than the piece. */
#define MIN_CUT 8

static PyObject *K_ARGS, *FRAGMENT;

static void args_text_dealloc(ArgsText *self) {
    Py_XDECREF(self->texts);
    Py_XDECREF(self->correlation);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *args_text_text(ArgsText *self, void *closure) {
    return PyBytes_FromStringAndSize(PyBytes_AS_STRING(self->texts) + self->start, self->size);
}

static PyMemberDef args_text_members[] = {
    {"correlation", T_OBJECT_EX, offsetof(ArgsText, correlation), READONLY,
     "its top-level correlation (int), or None"},
    {NULL},
};

static PyGetSetDef args_text_getset[] = {
    {"text", (getter)args_text_text, NULL, "the args object's JSON text, as read", NULL},
    {NULL},
};

static PyTypeObject ArgsTextType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kineto_sql.loading._cargs.ArgsText",
    .tp_basicsize = sizeof(ArgsText),
    .tp_dealloc = (destructor)args_text_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An event's args object kept as its text, with its correlation read from it.",
    .tp_members = args_text_members,
    .tp_getset = args_text_getset,
};

static int is_space(unsigned char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

static Py_ssize_t skip_space(const char *p, Py_ssize_t i, Py_ssize_t n) {
    while (i < n && is_space((unsigned char)p[i]))
        i++;
    return i;
}

/* The bytes the structure scans stop at: quotes, brackets, commas. */
static unsigned char SPECIAL[256];

/* Between strings the structure's bytes are close together (keys, numbers): a byte loop over the table
   finds them faster than a sixteen-byte SSE2 test did (hta_trace_diff_control's 4x replica: cut 0.100 s
   against 0.151 s). A string's text is skipped sixteen bytes at a time where SSE2 is there (every x86-64). */
static inline Py_ssize_t next_special(const char *p, Py_ssize_t i, Py_ssize_t n) {
    while (i < n && !SPECIAL[(unsigned char)p[i]])
        i++;
    return i;
}

/* The index of the next quote or backslash from `i`, or n. */
#if defined(__SSE2__)
#include <emmintrin.h>

static inline Py_ssize_t next_quote_or_escape(const char *p, Py_ssize_t i, Py_ssize_t n) {
    const __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\');
    while (i + 16 <= n) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        int mask = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, slash)));
        if (mask)
            return i + __builtin_ctz((unsigned)mask);
        i += 16;
    }
    while (i < n && p[i] != '"' && p[i] != '\\')
        i++;
    return i;
}
#else
static inline Py_ssize_t next_quote_or_escape(const char *p, Py_ssize_t i, Py_ssize_t n) {
    while (i < n && p[i] != '"' && p[i] != '\\')
        i++;
    return i;
}
#endif

/* The index of the quote that closes the string whose text begins at `i`, or -1; *escaped is set when the
   string holds an escape. */
static Py_ssize_t string_end(const char *p, Py_ssize_t i, Py_ssize_t n, int *escaped) {
    for (;;) {
        i = next_quote_or_escape(p, i, n);
        if (i >= n)
            return -1;
        if (p[i] == '"')
            return i;
        *escaped = 1;
        i += 2; /* a backslash and the byte it escapes */
    }
}

enum { CUT, KEEP, BROKEN };

/* The args object whose `{` is at p[at]: *end the index after its `}`; CUT with *correlation (a new
   reference: an int, or None) when its correlation reads exactly from the text, KEEP when it is to be
   parsed, BROKEN when it does not close within the piece. */
static int read_args(const char *p, Py_ssize_t at, Py_ssize_t n, Py_ssize_t *end, PyObject **correlation) {
    int depth = 0, deepest = 0, key_next = 0, keep = 0;
    Py_ssize_t i = at, corr_at = -1;
    for (;;) {
        i = next_special(p, i, n);
        if (i >= n)
            return BROKEN;
        char c = p[i];
        if (c == '"') {
            int escaped = 0;
            Py_ssize_t close = string_end(p, i + 1, n, &escaped);
            if (close < 0)
                return BROKEN;
            keep |= escaped; /* the engine stores a string's escapes as written: parsed, it gets their text */
            if (depth == 1 && key_next) {
                key_next = 0;
                if (close - i - 1 == 11 && memcmp(p + i + 1, "correlation", 11) == 0) {
                    Py_ssize_t j = skip_space(p, close + 1, n);
                    corr_at = j < n && p[j] == ':' ? skip_space(p, j + 1, n) : -2;
                }
            }
            i = close + 1;
            continue;
        }
        if (c == '{' || c == '[') {
            if (++depth > deepest)
                deepest = depth;
            key_next = depth == 1;
        } else if (c == '}' || c == ']') {
            key_next = 0;
            if (--depth == 0) {
                *end = i + 1;
                break;
            }
        } else if (depth == 1) { /* a comma */
            key_next = 1;
        }
        i++;
    }
    if (keep || deepest > MAX_DEPTH || *end - at < MIN_CUT || corr_at == -2)
        return KEEP;
    if (corr_at < 0) {
        Py_INCREF(Py_None);
        *correlation = Py_None;
        return CUT;
    }
    /* a plain integer literal of at most 18 digits, then the end of the value */
    Py_ssize_t j = corr_at;
    int negative = j < n && p[j] == '-';
    if (negative)
        j++;
    Py_ssize_t digits_at = j;
    int64_t value = 0;
    while (j < n && p[j] >= '0' && p[j] <= '9' && j - digits_at < 19) {
        value = value * 10 + (p[j] - '0');
        j++;
    }
    Py_ssize_t digits = j - digits_at;
    j = skip_space(p, j, n);
    if (digits == 0 || digits > 18 || (digits > 1 && p[digits_at] == '0') || j >= n || (p[j] != ',' && p[j] != '}'))
        return KEEP;
    *correlation = PyLong_FromLongLong(negative ? -value : value);
    return *correlation == NULL ? BROKEN : CUT;
}

/* `index` in decimal at o; the end of it. */
static char *write_index(char *o, Py_ssize_t index) {
    char digits[24];
    int k = 0;
    do {
        digits[k++] = (char)('0' + index % 10);
        index /= 10;
    } while (index);
    while (k)
        *o++ = digits[--k];
    return o;
}

typedef struct {
    Py_ssize_t start, size; /* in the piece */
    PyObject *correlation;  /* owned */
} Cut;

/* The ArgsText objects of `cuts`, their texts copied into one `[text,text,...]`. */
static PyObject *args_texts(const char *p, Cut *cuts, Py_ssize_t count, Py_ssize_t bytes) {
    PyObject *texts = PyBytes_FromStringAndSize(NULL, bytes + count + 1), *list = PyList_New(count);
    if (texts == NULL || list == NULL)
        goto failed;
    char *o = PyBytes_AS_STRING(texts);
    *o++ = '[';
    for (Py_ssize_t k = 0; k < count; k++) {
        ArgsText *a = PyObject_New(ArgsText, &ArgsTextType);
        if (a == NULL)
            goto failed;
        Py_INCREF(texts);
        a->texts = texts;
        a->start = o - PyBytes_AS_STRING(texts);
        a->size = cuts[k].size;
        a->correlation = cuts[k].correlation;
        cuts[k].correlation = NULL;
        PyList_SET_ITEM(list, k, (PyObject *)a);
        memcpy(o, p + cuts[k].start, (size_t)cuts[k].size);
        o += cuts[k].size;
        *o++ = ',';
    }
    if (count)
        o[-1] = ']';
    else
        *o++ = ']';
    Py_DECREF(texts);
    return list;
failed:
    Py_XDECREF(texts);
    Py_XDECREF(list);
    return NULL;
}

/* cut(piece) -> (cut text, [ArgsText, ...]) or None (see the top of this file). */
static PyObject *cut(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const char *p = view.buf;
    Py_ssize_t n = view.len, i = 0, copied = 0, count = 0, capacity = 0, bytes = 0;
    Cut *cuts = NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, n), *result = NULL;
    if (out == NULL)
        goto done;
    char *o = PyBytes_AS_STRING(out);
    int depth = 0, key_next = 0, in_object = 0, declined = 0;
    while (!declined) {
        i = next_special(p, i, n);
        if (i >= n)
            break;
        char c = p[i];
        if (c == '"') {
            int escaped = 0;
            Py_ssize_t close = string_end(p, i + 1, n, &escaped);
            if (close < 0) {
                declined = 1;
                break;
            }
            if (depth == 1 && key_next) {
                key_next = 0;
                if (escaped) {
                    declined = 1; /* an escaped key may read "args" */
                    break;
                }
                if (close - i - 1 == 4 && memcmp(p + i + 1, "args", 4) == 0) {
                    Py_ssize_t j = skip_space(p, close + 1, n);
                    if (j >= n || p[j] != ':') {
                        declined = 1;
                        break;
                    }
                    j = skip_space(p, j + 1, n);
                    if (j < n && (p[j] == '-' || (p[j] >= '0' && p[j] <= '9'))) {
                        declined = 1; /* a number: a placeholder could not be told from it */
                        break;
                    }
                    if (j < n && p[j] == '{') {
                        Py_ssize_t end = j;
                        PyObject *correlation = NULL;
                        int how = read_args(p, j, n, &end, &correlation);
                        if (how == BROKEN || (how == CUT && count >= 10000000)) {
                            Py_XDECREF(correlation);
                            declined = 1;
                            break;
                        }
                        if (how == CUT) {
                            if (count == capacity) {
                                Py_ssize_t more = capacity ? 2 * capacity : 1024;
                                Cut *grown = PyMem_Realloc(cuts, (size_t)more * sizeof(Cut));
                                if (grown == NULL) {
                                    Py_DECREF(correlation);
                                    PyErr_NoMemory();
                                    goto done;
                                }
                                cuts = grown;
                                capacity = more;
                            }
                            cuts[count].start = j;
                            cuts[count].size = end - j;
                            cuts[count].correlation = correlation;
                            bytes += end - j;
                            memcpy(o, p + copied, (size_t)(j - copied));
                            o += j - copied;
                            o = write_index(o, count);
                            count++;
                            copied = end;
                        }
                        i = end;
                        continue;
                    }
                    i = j;
                    continue;
                }
            }
            i = close + 1;
            continue;
        }
        if (c == '{' || c == '[') {
            if (depth == 0)
                in_object = c == '{';
            depth++;
            key_next = depth == 1 && c == '{';
        } else if (c == '}' || c == ']') {
            if (--depth < 0)
                declined = 1;
            key_next = 0;
        } else if (depth == 1 && in_object) { /* a comma between an event's fields */
            key_next = 1;
        }
        i++;
    }
    if (declined || depth != 0) {
        Py_INCREF(Py_None);
        result = Py_None;
        goto done;
    }
    memcpy(o, p + copied, (size_t)(n - copied));
    o += n - copied;
    if (_PyBytes_Resize(&out, o - PyBytes_AS_STRING(out)) < 0)
        goto done;
    PyObject *list = args_texts(p, cuts, count, bytes);
    if (list != NULL) {
        result = PyTuple_Pack(2, out, list);
        Py_DECREF(list);
    }
done:
    for (Py_ssize_t k = 0; k < count; k++)
        Py_XDECREF(cuts[k].correlation);
    PyMem_Free(cuts);
    Py_XDECREF(out);
    PyBuffer_Release(&view);
    return result;
}

/* put_back(events, cut_args): each event's placeholder `args` (an int) becomes its ArgsText. False when a
   placeholder is out of range (then the caller parses the piece as it is). */
static PyObject *put_back(PyObject *self, PyObject *args) {
    PyObject *events, *cut_args;
    if (!PyArg_ParseTuple(args, "O!O!", &PyList_Type, &events, &PyList_Type, &cut_args))
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(cut_args);
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(events); k++) {
        PyObject *e = PyList_GET_ITEM(events, k);
        if (!PyDict_CheckExact(e))
            continue;
        PyObject *placeholder = PyDict_GetItemWithError(e, K_ARGS);
        if (placeholder == NULL) {
            if (PyErr_Occurred())
                return NULL;
            continue;
        }
        if (!PyLong_CheckExact(placeholder))
            continue;
        Py_ssize_t index = PyLong_AsSsize_t(placeholder);
        if (index < 0 || index >= count) {
            PyErr_Clear();
            Py_RETURN_FALSE;
        }
        if (PyDict_SetItem(e, K_ARGS, PyList_GET_ITEM(cut_args, index)) < 0)
            return NULL;
    }
    Py_RETURN_TRUE;
}

/* fragment(value): orjson.Fragment of an ArgsText's text (orjson.dumps's `default`: the text is written as
   it was read); TypeError for anything else, as orjson expects of a default that cannot write a value. */
static PyObject *fragment(PyObject *self, PyObject *value) {
    if (!Py_IS_TYPE(value, &ArgsTextType)) {
        PyErr_Format(PyExc_TypeError, "Type is not JSON serializable: %s", Py_TYPE(value)->tp_name);
        return NULL;
    }
    PyObject *text = args_text_text((ArgsText *)value, NULL);
    if (text == NULL)
        return NULL;
    PyObject *out = PyObject_CallOneArg(FRAGMENT, text);
    Py_DECREF(text);
    return out;
}

/* texts_of(cut_args): the `[text,text,...]` buffers the ArgsText objects of `cut_args` lie in, each once,
   in order (what is checked as JSON before the load may succeed). */
static PyObject *texts_of(PyObject *self, PyObject *cut_args) {
    if (!PyList_Check(cut_args)) {
        PyErr_SetString(PyExc_TypeError, "texts_of takes a list");
        return NULL;
    }
    PyObject *out = PyList_New(0), *last = NULL;
    for (Py_ssize_t k = 0; out != NULL && k < PyList_GET_SIZE(cut_args); k++) {
        PyObject *a = PyList_GET_ITEM(cut_args, k);
        if (Py_IS_TYPE(a, &ArgsTextType) && ((ArgsText *)a)->texts != last) {
            last = ((ArgsText *)a)->texts;
            if (PyList_Append(out, last) < 0)
                Py_CLEAR(out);
        }
    }
    return out;
}

static const char *const KEY_NAMES[] = {"args"};
static PyObject **const KEYS[] = {&K_ARGS};
USE_KEYS_METHOD

static PyMethodDef methods[] = {
    {"cut", cut, METH_O, "cut(piece): (the piece with its events' args objects cut out, [ArgsText]) or None."},
    {"put_back", put_back, METH_VARARGS, "put_back(events, cut_args): the placeholders become their ArgsText."},
    {"fragment", fragment, METH_O, "fragment(args_text): orjson.Fragment of its text (orjson.dumps's default)."},
    {"texts_of", texts_of, METH_O, "texts_of(cut_args): the JSON texts their args lie in, each once."},
    USE_KEYS_ENTRY,
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cargs", NULL, -1, methods};

PyMODINIT_FUNC PyInit__cargs(void) {
    for (const char *c = "\"{}[],"; *c; c++)
        SPECIAL[(unsigned char)*c] = 1;
    if (PyType_Ready(&ArgsTextType) < 0 || intern_keys(KEY_NAMES, KEYS, 1) < 0)
        return NULL;
    PyObject *orjson = PyImport_ImportModule("orjson");
    if (orjson == NULL)
        return NULL;
    FRAGMENT = PyObject_GetAttrString(orjson, "Fragment");
    Py_DECREF(orjson);
    if (FRAGMENT == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&ArgsTextType);
    if (PyModule_AddObject(m, "ArgsText", (PyObject *)&ArgsTextType) < 0) {
        Py_DECREF(&ArgsTextType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
