/* Inner loops in C: rewriter.document.speedups loads this module when it was built. Each
 * function has a Python twin of the same name, its reference, beside the code that calls it
 * (rewriter/html/tags.py, rewriter/css/syntax.py, rewriter/document/encoding.py), whose
 * docstring is the contract; tests/test_speedups.py keeps the two equal.
 *
 * Every function is pure: a str and numbers in, plain tuples, lists and dicts out. Text is
 * read through PyUnicode_READ, whatever its kind; offsets are code points, as in Python.
 *
 * Any caller is safe, not only the engine (tests/test_speedups.py holds each function to its
 * twin on hostile ones too): an argument's type is checked before it is read; an offset is
 * read as operator.index reads it and clamped to the text, never trusted; nothing borrowed
 * from a list, dict or tuple the caller can change is used after a call back into Python
 * (a callback may empty the list it came from): what is iterated is iterated as Python's
 * own loop would, one new reference at a time, or copied first.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#ifndef REWRITER_SOURCE
#define REWRITER_SOURCE ""  /* built without setup.py: not checked */
#endif
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Text access                                                               */
/* ------------------------------------------------------------------------ */

typedef struct {
    int kind;
    const void *data;
    Py_ssize_t n;
    PyObject *object;
} Text;

#define CH(t, i) PyUnicode_READ((t)->kind, (t)->data, (i))

static int
text_init(Text *t, PyObject *object)
{
    if (!PyUnicode_Check(object)) {
        PyErr_Format(PyExc_TypeError, "expected str, not %.100s", Py_TYPE(object)->tp_name);
        return -1;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(object) < 0)
        return -1;
#endif
    t->kind = PyUnicode_KIND(object);
    t->data = PyUnicode_DATA(object);
    t->n = PyUnicode_GET_LENGTH(object);
    t->object = object;
    return 0;
}

/* An offset argument, as operator.index reads it (an int, or any __index__: TypeError for
 * others), clamped to PY_SSIZE_T_MIN or PY_SSIZE_T_MAX when beyond them: past any text's
 * ends either way. 0, or -1 with the exception set. */
static int
offset_argument(PyObject *object, Py_ssize_t *offset)
{
    *offset = PyNumber_AsSsize_t(object, NULL);
    return *offset == -1 && PyErr_Occurred() ? -1 : 0;
}

/* The start of a search in a text of n characters, as str.find reads its start: None is 0,
 * a negative one counts from the end (and is 0 past the start). 0, or -1 with the
 * exception set; the start may be past the text's end (nothing is found there). */
static int
find_start(PyObject *object, Py_ssize_t n, Py_ssize_t *start)
{
    if (object == Py_None) {
        *start = 0;
        return 0;
    }
    if (!PyIndex_Check(object)) {
        PyErr_SetString(PyExc_TypeError, "slice indices must be integers or None or have an __index__ method");
        return -1;
    }
    if (offset_argument(object, start) < 0)
        return -1;
    if (*start < 0)
        *start = *start + n < 0 ? 0 : *start + n; /* no overflow: n >= 0 > *start */
    return 0;
}

/* The first c at or after from, or -1. */
static Py_ssize_t
find_char(const Text *t, Py_ssize_t from, Py_UCS4 c)
{
    if (from < 0)
        from = 0;
    if (from >= t->n)
        return -1;
    switch (t->kind) {
    case PyUnicode_1BYTE_KIND: {
        if (c > 0xFF)
            return -1;
        const Py_UCS1 *d = (const Py_UCS1 *)t->data;
        const void *hit = memchr(d + from, (int)c, (size_t)(t->n - from));
        return hit == NULL ? -1 : (Py_ssize_t)((const Py_UCS1 *)hit - d);
    }
    case PyUnicode_2BYTE_KIND: {
        const Py_UCS2 *d = (const Py_UCS2 *)t->data;
        if (c > 0xFFFF)
            return -1;
        /* memchr for the character's low byte, each hit checked (as CPython's find_char). */
        const unsigned char *bytes = (const unsigned char *)(d + from);
        const unsigned char *end = (const unsigned char *)(d + t->n);
        unsigned char low = (unsigned char)(c & 0xFF);
        while (bytes < end) {
            const unsigned char *hit = memchr(bytes, low, (size_t)(end - bytes));
            if (hit == NULL)
                return -1;
            Py_ssize_t at = (Py_ssize_t)(hit - (const unsigned char *)d);
            if ((at & 1) == (PY_LITTLE_ENDIAN ? 0 : 1) && d[at >> 1] == c) /* the low byte of a code unit */
                return at >> 1;
            bytes = hit + 1;
        }
        return -1;
    }
    default: {
        const Py_UCS4 *d = (const Py_UCS4 *)t->data;
        for (Py_ssize_t i = from; i < t->n; i++)
            if (d[i] == c)
                return i;
        return -1;
    }
    }
}

/* The first two-character a, b at or after from, or -1. */
static Py_ssize_t
find_pair(const Text *t, Py_ssize_t from, Py_UCS4 a, Py_UCS4 b)
{
    Py_ssize_t i = find_char(t, from, a);
    while (i >= 0 && i + 1 < t->n) {
        if (CH(t, i + 1) == b)
            return i;
        i = find_char(t, i + 1, a);
    }
    return -1;
}

/* Long runs of raw text are scanned with the GIL released, so that other threads run
 * meanwhile: a loop that reads only C buffers (the text's characters: a str is immutable,
 * and the caller's argument keeps it alive; arrays of the function's own) and calls nothing
 * of Python's. Below RELEASE_AT bytes of text, handing the GIL over and taking it back costs
 * about what the work does, so a scan reads its first RELEASE_AT bytes with the GIL held
 * (most stops are near) and lets it go only for what is left. Only functions that hold
 * nothing another thread could change (no list or dict of the caller's) scan so. */
#define RELEASE_AT 4096

/* find_char, what lies past the first RELEASE_AT bytes read without the GIL. */
static Py_ssize_t
find_char_released(const Text *t, Py_ssize_t from, Py_UCS4 c)
{
    if (from < 0)
        from = 0;
    Py_ssize_t window = RELEASE_AT / t->kind;
    if (from >= t->n || t->n - from <= 2 * window)
        return find_char(t, from, c);
    Text head = *t;
    head.n = from + window;
    Py_ssize_t at = find_char(&head, from, c);
    if (at >= 0)
        return at;
    Py_BEGIN_ALLOW_THREADS
    at = find_char(t, from + window, c);
    Py_END_ALLOW_THREADS
    return at;
}

/* find_pair, through find_char_released. */
static Py_ssize_t
find_pair_released(const Text *t, Py_ssize_t from, Py_UCS4 a, Py_UCS4 b)
{
    Py_ssize_t i = find_char_released(t, from, a);
    while (i >= 0 && i + 1 < t->n) {
        if (CH(t, i + 1) == b)
            return i;
        i = find_char_released(t, i + 1, a);
    }
    return -1;
}

static inline int
is_html_space(Py_UCS4 c)
{
    return c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' ';
}

/* Interned constants */
static PyObject *s_double, *s_single, *s_empty, *s_equals; /* quotes */
static PyObject *s_url, *s_import, *s_image_set;           /* CSS contexts */
static PyObject *s_lower, *s_new, *s_one;

/* ------------------------------------------------------------------------ */
/* Start tags (HTML §13.2.5.32-39)                                           */
/* ------------------------------------------------------------------------ */

enum { QUOTE_DOUBLE, QUOTE_SINGLE, QUOTE_NONE, QUOTE_VALUELESS };

typedef struct {
    Py_ssize_t name_start, name_end, value_start, value_end;
    int quote;
} Attribute;

static PyObject *
quote_object(int quote)
{
    switch (quote) {
    case QUOTE_DOUBLE:
        return s_double;
    case QUOTE_SINGLE:
        return s_single;
    case QUOTE_NONE:
        return s_empty;
    default:
        return s_equals;
    }
}

/* Past the tag name of the start tag whose "<" is at offset, or -1 when there is none; and
 * the next attribute from *position: 1 with *a filled and *position past it, or 0 when the
 * tag has no more (*position is left where the search for its ">" starts). Each is made
 * once per kind of str: a loop over one kind reads a character without a switch. */
#define TAG_SCANNERS(TYPE, SUFFIX)                                                            \
    static Py_ssize_t tag_name_end_##SUFFIX(const TYPE *d, Py_ssize_t n, Py_ssize_t offset)   \
    {                                                                                         \
        if (offset < 0 || offset >= n || d[offset] != '<')                                    \
            return -1;                                                                        \
        Py_ssize_t p = offset + 1;                                                            \
        while (p < n) {                                                                       \
            TYPE c = d[p];                                                                    \
            if (c <= ' ' ? is_html_space(c) : c == '/' || c == '>')                           \
                break;                                                                        \
            p++;                                                                              \
        }                                                                                     \
        return p;                                                                             \
    }                                                                                         \
                                                                                              \
    static int next_attribute_##SUFFIX(const Text *t, const TYPE *d, Py_ssize_t n,            \
                                       Py_ssize_t *position, Attribute *a)                    \
    {                                                                                         \
        Py_ssize_t p = *position;                                                             \
        while (p < n && (is_html_space(d[p]) || d[p] == '/'))                                 \
            p++;                                                                              \
        if (p >= n || d[p] == '>')                                                            \
            return 0;                                                                         \
        a->name_start = p++;                                                                  \
        while (p < n) {                                                                       \
            TYPE c = d[p];                                                                    \
            if (c <= ' ' ? is_html_space(c) : c == '/' || c == '=' || c == '>')               \
                break;                                                                        \
            p++;                                                                              \
        }                                                                                     \
        a->name_end = p;                                                                      \
        Py_ssize_t q = p;                                                                     \
        while (q < n && is_html_space(d[q]))                                                  \
            q++;                                                                              \
        if (q < n && d[q] == '=') {                                                           \
            q++;                                                                              \
            while (q < n && is_html_space(d[q]))                                              \
                q++;                                                                          \
            TYPE c = q < n ? d[q] : 0;                                                        \
            if (q < n && (c == '"' || c == '\'')) {                                           \
                Py_ssize_t e = find_char(t, q + 1, c);                                        \
                a->value_start = q + 1;                                                       \
                a->value_end = e < 0 ? n : e;                                                 \
                a->quote = c == '"' ? QUOTE_DOUBLE : QUOTE_SINGLE;                            \
                *position = e < 0 ? n : e + 1;                                                \
            }                                                                                 \
            else {                                                                            \
                Py_ssize_t e = q;                                                             \
                while (e < n && !(d[e] <= ' ' ? is_html_space(d[e]) : d[e] == '>'))           \
                    e++;                                                                      \
                a->value_start = q;                                                           \
                a->value_end = e;                                                             \
                a->quote = QUOTE_NONE;                                                        \
                *position = e;                                                                \
            }                                                                                 \
        }                                                                                     \
        else {                                                                                \
            a->value_start = a->value_end = p;                                                \
            a->quote = QUOTE_VALUELESS;                                                       \
            *position = p;                                                                    \
        }                                                                                     \
        return 1;                                                                             \
    }

TAG_SCANNERS(Py_UCS1, 1)
TAG_SCANNERS(Py_UCS2, 2)
TAG_SCANNERS(Py_UCS4, 4)

static Py_ssize_t
tag_name_end(const Text *t, Py_ssize_t offset)
{
    switch (t->kind) {
    case PyUnicode_1BYTE_KIND:
        return tag_name_end_1((const Py_UCS1 *)t->data, t->n, offset);
    case PyUnicode_2BYTE_KIND:
        return tag_name_end_2((const Py_UCS2 *)t->data, t->n, offset);
    default:
        return tag_name_end_4((const Py_UCS4 *)t->data, t->n, offset);
    }
}

static int
next_attribute(const Text *t, Py_ssize_t *position, Attribute *a)
{
    switch (t->kind) {
    case PyUnicode_1BYTE_KIND:
        return next_attribute_1(t, (const Py_UCS1 *)t->data, t->n, position, a);
    case PyUnicode_2BYTE_KIND:
        return next_attribute_2(t, (const Py_UCS2 *)t->data, t->n, position, a);
    default:
        return next_attribute_4(t, (const Py_UCS4 *)t->data, t->n, position, a);
    }
}

/* Attribute names as str objects, ASCII-lowercased. Short ASCII names (most of them: href,
 * class, src) come from a small cache, so that reading a tag allocates nothing for them. */
#define NAME_CACHE_SIZE 1024
#define NAME_CACHE_LENGTH 24

typedef struct {
    PyObject *name;
    Py_ssize_t length;
    char chars[NAME_CACHE_LENGTH];
} CachedName;

static CachedName name_cache[NAME_CACHE_SIZE];

/* A new reference to the lowercased name of a; *irregular is set when it holds NUL or a
 * lone surrogate. */
static PyObject *
attribute_name(const Text *t, const Attribute *a, int *irregular)
{
    Py_ssize_t length = a->name_end - a->name_start;
    if (length <= NAME_CACHE_LENGTH) {
        char chars[NAME_CACHE_LENGTH];
        Py_ssize_t i;
        uint32_t hash = 2166136261u;
        for (i = 0; i < length; i++) {
            Py_UCS4 c = CH(t, a->name_start + i);
            if (c >= 0x80)
                break;
            if (c >= 'A' && c <= 'Z')
                c += 'a' - 'A';
            if (c == 0)
                *irregular = 1;
            chars[i] = (char)c;
            hash = (hash ^ (uint32_t)c) * 16777619u;
        }
        if (i == length) {
            CachedName *entry = &name_cache[hash % NAME_CACHE_SIZE];
            if (entry->name != NULL && entry->length == length && memcmp(entry->chars, chars, (size_t)length) == 0) {
                Py_INCREF(entry->name);
                return entry->name;
            }
            PyObject *name = PyUnicode_FromStringAndSize(chars, length);
            if (name == NULL)
                return NULL;
            if (PyObject_Hash(name) == -1) { /* cached with its hash, for the dict look-ups */
                Py_DECREF(name);
                return NULL;
            }
            Py_XSETREF(entry->name, Py_NewRef(name));
            entry->length = length;
            memcpy(entry->chars, chars, (size_t)length);
            return name;
        }
    }
    Py_UCS4 *buffer = PyMem_New(Py_UCS4, length > 0 ? length : 1);
    if (buffer == NULL)
        return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < length; i++) {
        Py_UCS4 c = CH(t, a->name_start + i);
        if (c >= 'A' && c <= 'Z')
            c += 'a' - 'A';
        else if (c == 0 || (c >= 0xD800 && c <= 0xDFFF))
            *irregular = 1;
        buffer[i] = c;
    }
    PyObject *name = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buffer, length);
    PyMem_Free(buffer);
    return name;
}

static PyObject *
span_tuple(const Attribute *a)
{
    PyObject *start = PyLong_FromSsize_t(a->value_start);
    PyObject *end = PyLong_FromSsize_t(a->value_end);
    if (start == NULL || end == NULL) {
        Py_XDECREF(start);
        Py_XDECREF(end);
        return NULL;
    }
    PyObject *quote = quote_object(a->quote);
    Py_INCREF(quote);
    PyObject *tuple = PyTuple_New(3);
    if (tuple == NULL) {
        Py_DECREF(start);
        Py_DECREF(end);
        Py_DECREF(quote);
        return NULL;
    }
    PyTuple_SET_ITEM(tuple, 0, start);
    PyTuple_SET_ITEM(tuple, 1, end);
    PyTuple_SET_ITEM(tuple, 2, quote);
    return tuple;
}

static PyObject *
no_start_tag(Py_ssize_t offset)
{
    PyErr_Format(PyExc_ValueError, "no start tag at %zd: a tag starts with '<'", offset);
    return NULL;
}

/* The (text, index) arguments of tag_attributes and tag_end: 0, or -1 with the exception
   set (usage is the TypeError's message for a wrong count). */
static int
text_and_index(PyObject *const *args, Py_ssize_t nargs, const char *usage, Text *t, Py_ssize_t *index)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    if (text_init(t, args[0]) < 0)
        return -1;
    return offset_argument(args[1], index);
}

PyDoc_STRVAR(tag_attributes_doc,
             "tag_attributes(text, offset) -> (dict, end)\n\n"
             "The attributes of the start tag at offset (name: (start, end, quote)) and the offset past it.");

static PyObject *
tag_attributes(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Text t;
    Py_ssize_t offset;
    if (text_and_index(args, nargs, "tag_attributes takes text and offset", &t, &offset) < 0)
        return NULL;
    Py_ssize_t position = tag_name_end(&t, offset);
    if (position < 0)
        return no_start_tag(offset);
    PyObject *spans = PyDict_New();
    if (spans == NULL)
        return NULL;
    Attribute a;
    while (next_attribute(&t, &position, &a)) {
        int irregular = 0;
        PyObject *name = attribute_name(&t, &a, &irregular);
        if (name == NULL)
            goto error;
        int known = PyDict_Contains(spans, name);
        if (known == 0) {
            PyObject *span = span_tuple(&a);
            if (span == NULL || PyDict_SetItem(spans, name, span) < 0) {
                Py_XDECREF(span);
                Py_DECREF(name);
                goto error;
            }
            Py_DECREF(span);
        }
        Py_DECREF(name);
        if (known < 0)
            goto error;
    }
    Py_ssize_t close = find_char(&t, position, '>');
    return Py_BuildValue("(Nn)", spans, close < 0 ? t.n : close + 1);
error:
    Py_DECREF(spans);
    return NULL;
}

PyDoc_STRVAR(tag_end_doc, "tag_end(text, offset) -> int\n\nThe offset just past the tag at offset.");

static PyObject *
tag_end(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Text t;
    Py_ssize_t offset;
    if (text_and_index(args, nargs, "tag_end takes text and offset", &t, &offset) < 0)
        return NULL;
    Py_ssize_t position = tag_name_end(&t, offset);
    if (position < 0)
        return no_start_tag(offset);
    Attribute a;
    while (next_attribute(&t, &position, &a))
        ;
    Py_ssize_t close = find_char(&t, position, '>');
    return PyLong_FromSsize_t(close < 0 ? t.n : close + 1);
}

/* ------------------------------------------------------------------------ */
/* plain_links: the engine's loop over plain link values                    */
/* (rewriter/html/plain.py is its twin and its contract)                     */
/* ------------------------------------------------------------------------ */

/* The fields of a LinkSearch (rewriter.html.plain.LinkSearch), read once per call. */
enum {
    SEARCH_TEXT, SEARCH_ELEMENTS, SEARCH_LINE_STARTS, SEARCH_SKIP, SEARCH_HTML, SEARCH_HTML_TABLES,
    SEARCH_FOREIGN_TABLES, SEARCH_TABLE_OF, SEARCH_CLASSIFIED, SEARCH_CLASSIFY, SEARCH_LINK, SEARCH_BASE,
    SEARCH_LAYER, SEARCH_FOUND, SEARCH_EDITS, SEARCH_COUNTS, SEARCH_KEPT, SEARCH_INSERTS,
    SEARCH_INSERT_TEXTS, SEARCH_FIELD_COUNT
};
static const char *const SEARCH_FIELDS[SEARCH_FIELD_COUNT] = {
    "text", "elements", "line_starts", "skip", "html", "html_tables", "foreign_tables", "table_of",
    "classified", "classify", "link", "base", "layer", "found", "edits", "counts", "kept",
    "inserts", "insert_texts"};
/* The fields of a Link this code fills, in the order record_link has them; a link type may
 * order them otherwise (they are put by name). */
enum { LINK_FIELD_COUNT = 11 };
static const char *const LINK_FIELDS[LINK_FIELD_COUNT] = {
    "element", "attribute", "kind", "original", "resolved", "status", "reason", "base", "layer", "start", "end"};
static PyObject *search_names[SEARCH_FIELD_COUNT], *link_names[LINK_FIELD_COUNT], *s_fields;

typedef struct {
    PyObject *args[SEARCH_FIELD_COUNT]; /* new references */
    Py_ssize_t slot[LINK_FIELD_COUNT];  /* where each of LINK_FIELDS goes in a link */
    PyObject *prefixes;                 /* each edit's text, once: a page's prefixes repeat (a new reference) */
} Search;

enum { CODE_URL = 1, CODE_LAZY_URL = 2, CODE_OTHER = 3, CODE_STYLE = 4, CODE_SRCSET = 5 };

typedef struct {
    PyObject *name; /* a new reference */
    Attribute a;
    long code;
} Taken;

static PyObject *s_srcset, *s_source_col, *s_img, *s_position, *s_tag, *s_namespace, *s_rewritten, *s_relinked, *s_amp, *s_ampersand;
static PyObject *s_quot, *s_apos, *s_escaped_quot, *s_escaped_apos, *s_escaped_amp;

static int
style_may_hold_urls(const Text *t, const Attribute *a)
{
    for (Py_ssize_t i = a->value_start; i < a->value_end; i++) {
        Py_UCS4 c = CH(t, i);
        if (c == '(' || c == '@' || c == '\\' || c == '&')
            return 1;
    }
    return 0;
}

static inline int
needs_quotes(Py_UCS4 c)
{
    return c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' ' || c == '"' || c == '\'' || c == '<' ||
           c == '>' || c == '`';
}

/* Appends (element, tag, name, start, end, quote, code) to left; name NULL: the general path. */
static int
hand_back(PyObject *left, PyObject *element, PyObject *tag, PyObject *name, const Attribute *a, long code)
{
    PyObject *record;
    if (name == NULL)
        record = Py_BuildValue("(OOOnnOl)", element, tag, Py_None, (Py_ssize_t)0, (Py_ssize_t)0, s_empty, 0L);
    else
        record = Py_BuildValue("(OOOnnOl)", element, tag, name, a->value_start, a->value_end,
                               quote_object(a->quote), code);
    if (record == NULL)
        return -1;
    int done = PyList_Append(left, record);
    Py_DECREF(record);
    return done;
}

/* 1 when s is "rewritten" or "relinked", 0 when not, -1 on error. */
static int
is_rewritten(PyObject *status)
{
    if (status == s_rewritten || status == s_relinked)
        return 1;
    int equal = PyObject_RichCompareBool(status, s_rewritten, Py_EQ);
    if (equal != 0)
        return equal;
    return PyObject_RichCompareBool(status, s_relinked, Py_EQ);
}

/* text escaped for an attribute value between quote characters (escape_attribute). */
static PyObject *
escape_attribute(PyObject *text, int quote)
{
    PyObject *quote_char = quote == QUOTE_DOUBLE ? s_quot : quote == QUOTE_SINGLE ? s_apos : NULL;
    int has_amp = PyUnicode_FindChar(text, '&', 0, PyUnicode_GET_LENGTH(text), 1) >= 0;
    int has_quote = quote_char != NULL && PyUnicode_FindChar(text, PyUnicode_READ_CHAR(quote_char, 0), 0,
                                                               PyUnicode_GET_LENGTH(text), 1) >= 0;
    if (!has_amp && !has_quote)
        return Py_NewRef(text);
    PyObject *escaped = PyUnicode_Replace(text, s_ampersand, s_escaped_amp, -1);
    if (escaped == NULL || quote_char == NULL)
        return escaped;
    PyObject *done = PyUnicode_Replace(escaped, quote_char, quote == QUOTE_DOUBLE ? s_escaped_quot : s_escaped_apos, -1);
    Py_DECREF(escaped);
    return done;
}

/* The two items of pair, as "first, second = pair" unpacks it: 0 with two new references,
 * or -1 with TypeError (not iterable) or ValueError (fewer or more than two items; never
 * more than three are asked of an iterator, which may be endless). */
static int
unpack_pair(PyObject *pair, PyObject **first, PyObject **second)
{
    if (PyTuple_CheckExact(pair) && PyTuple_GET_SIZE(pair) == 2) {
        *first = Py_NewRef(PyTuple_GET_ITEM(pair, 0));
        *second = Py_NewRef(PyTuple_GET_ITEM(pair, 1));
        return 0;
    }
    PyObject *iterator = PyObject_GetIter(pair);
    if (iterator == NULL)
        return -1;
    PyObject *items[3] = {NULL, NULL, NULL};
    int count = 0;
    while (count < 3 && (items[count] = PyIter_Next(iterator)) != NULL)
        count++;
    Py_DECREF(iterator);
    if (!PyErr_Occurred() && count == 2) {
        *first = items[0];
        *second = items[1];
        return 0;
    }
    if (!PyErr_Occurred()) {
        if (count < 2)
            PyErr_Format(PyExc_ValueError, "not enough values to unpack (expected 2, got %d)", count);
        else
            PyErr_SetString(PyExc_ValueError, "too many values to unpack (expected 2)");
    }
    for (int i = 0; i < count; i++)
        Py_DECREF(items[i]);
    return -1;
}

/* line_starts[line - 1] + column when all are exact ints, line_starts is a list and line
 * one of its lines, and the sum fits: 1 with *offset set, else 0 (the general path computes
 * it). Nothing here calls back into Python, so the borrowed item stays the list's. */
static int
line_offset_quickly(PyObject *line_starts, PyObject *position, Py_ssize_t *offset)
{
    if (!PyList_CheckExact(line_starts) || !PyTuple_CheckExact(position) || PyTuple_GET_SIZE(position) != 2)
        return 0;
    PyObject *line_object = PyTuple_GET_ITEM(position, 0), *column_object = PyTuple_GET_ITEM(position, 1);
    if (!PyLong_CheckExact(line_object) || !PyLong_CheckExact(column_object))
        return 0;
    Py_ssize_t line = PyLong_AsSsize_t(line_object), column = PyLong_AsSsize_t(column_object);
    if (PyErr_Occurred()) { /* beyond Py_ssize_t */
        PyErr_Clear();
        return 0;
    }
    if (line < 1 || line > PyList_GET_SIZE(line_starts))
        return 0;
    PyObject *start_object = PyList_GET_ITEM(line_starts, line - 1);
    if (!PyLong_CheckExact(start_object))
        return 0;
    Py_ssize_t start = PyLong_AsSsize_t(start_object);
    if (start == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return 0;
    }
    if (column > 0 ? start > PY_SSIZE_T_MAX - column : start < PY_SSIZE_T_MIN - column)
        return 0;
    *offset = start + column;
    return 1;
}

/* Where the start tag of element is: -2 when it has none, -1 on error. On one line (no
 * line_starts) the column is the offset, and source_col is read: no position tuple. Else
 * the offset is line_starts[line - 1] + column, computed as Python computes it (whatever
 * line_starts and the numbers are; a line of 0 is the last one's). Either is an integer
 * (operator.index) within the text: TypeError, ValueError otherwise. */
static Py_ssize_t
element_offset(PyObject *element, PyObject *line_starts, Py_ssize_t n)
{
    PyObject *found;
    if (line_starts == Py_None) {
        found = PyObject_GetAttr(element, s_source_col);
        if (found == NULL)
            return -1;
        if (found == Py_None) {
            Py_DECREF(found);
            return -2;
        }
    }
    else {
        PyObject *position = PyObject_GetAttr(element, s_position), *line, *column;
        if (position == NULL)
            return -1;
        if (position == Py_None) {
            Py_DECREF(position);
            return -2;
        }
        Py_ssize_t quick;
        if (line_offset_quickly(line_starts, position, &quick)) { /* the engine's: ints and a list */
            Py_DECREF(position);
            if (quick < 0 || quick >= n) {
                PyErr_Format(PyExc_ValueError, "no start tag at %zd: a tag starts with '<'", quick);
                return -1;
            }
            return quick;
        }
        int unpacked = unpack_pair(position, &line, &column);
        Py_DECREF(position);
        if (unpacked < 0)
            return -1;
        PyObject *index = PyNumber_Subtract(line, s_one);
        PyObject *start = index == NULL ? NULL : PyObject_GetItem(line_starts, index);
        found = start == NULL ? NULL : PyNumber_Add(start, column);
        Py_XDECREF(start);
        Py_XDECREF(index);
        Py_DECREF(line);
        Py_DECREF(column);
        if (found == NULL)
            return -1;
    }
    Py_ssize_t offset;
    int converted = offset_argument(found, &offset);
    Py_DECREF(found);
    if (converted < 0)
        return -1;
    if (offset < 0 || offset >= n) {
        PyErr_Format(PyExc_ValueError, "no start tag at %zd: a tag starts with '<'", offset);
        return -1;
    }
    return offset;
}

/* The tag of an HTML element, read from its start tag at offset: its name ASCII-lowercased,
 * "image" read as "img" (HTML §13.2.6.4.7), as the tree holds it. A name that is not all
 * ASCII, or holds NUL, is the element's own tag as a str (the tree reads NUL and lone
 * surrogates otherwise). A new reference; NULL on error. */
static PyObject *
html_tag(const Text *t, PyObject *element, Py_ssize_t offset)
{
    Py_ssize_t end = tag_name_end(t, offset);
    if (end < 0)
        return no_start_tag(offset);
    Attribute a = {offset + 1, end, 0, 0, 0};
    for (Py_ssize_t i = a.name_start; i < a.name_end; i++) {
        Py_UCS4 c = CH(t, i);
        if (c == 0 || c >= 0x80) { /* str(element.tag), as the twin reads it */
            PyObject *tag = PyObject_GetAttr(element, s_tag);
            if (tag == NULL)
                return NULL;
            Py_SETREF(tag, PyObject_Str(tag));
            return tag;
        }
    }
    if (end - offset == 6) {
        static const char image[] = "image";
        int same = 1;
        for (int i = 0; i < 5 && same; i++) {
            Py_UCS4 c = CH(t, offset + 1 + i);
            same = (c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c) == (Py_UCS4)image[i];
        }
        if (same)
            return Py_NewRef(s_img);
    }
    int irregular = 0;
    return attribute_name(t, &a, &irregular);
}

/* Appends the edit (at, end, text) to edits: 0, or -1 on error. */
static int
append_edit(PyObject *edits, Py_ssize_t at, Py_ssize_t end, PyObject *text)
{
    PyObject *edit = Py_BuildValue("(nnO)", at, end, text);
    if (edit == NULL)
        return -1;
    int done = PyList_Append(edits, edit);
    Py_DECREF(edit);
    return done;
}

/* A lean search's link of status (search.counts a dict): counted in counts; 1 when it is kept
 * as a record (its status in search.kept), 0 when not, -1 on error. */
static int
counted(const Search *s, PyObject *status)
{
    PyObject *counts = s->args[SEARCH_COUNTS];
    PyObject *count = PyDict_GetItemWithError(counts, status);
    if (count == NULL && PyErr_Occurred())
        return -1;
    PyObject *one = PyLong_FromLong(1);
    if (one == NULL)
        return -1;
    PyObject *sum = count == NULL ? Py_NewRef(one) : PyNumber_Add(count, one);
    Py_DECREF(one);
    if (sum == NULL)
        return -1;
    int done = PyDict_SetItem(counts, status, sum);
    Py_DECREF(sum);
    if (done < 0)
        return -1;
    return PySet_Contains(s->args[SEARCH_KEPT], status);
}

/* The edit (at, at, text) that puts a prefix before a URL, text (a str) the one equal str this
 * call has written before, when there is one: appended to the search's edits, or kept compactly
 * (at as 8 bytes appended to inserts, text to insert_texts) when those are given: 0, or -1. */
static int
append_insert(const Search *s, Py_ssize_t at, PyObject *text)
{
    PyObject *shared = PyDict_SetDefault(s->prefixes, text, text); /* borrowed */
    if (shared == NULL)
        return -1;
    PyObject *inserts = s->args[SEARCH_INSERTS];
    if (inserts == Py_None)
        return append_edit(s->args[SEARCH_EDITS], at, at, shared);
    Py_ssize_t size = PyByteArray_GET_SIZE(inserts);
    if (PyByteArray_Resize(inserts, size + 8) < 0)
        return -1;
    int64_t value = (int64_t)at;
    memcpy(PyByteArray_AS_STRING(inserts) + size, &value, 8);
    return PyList_Append(s->args[SEARCH_INSERT_TEXTS], shared);
}

/* The Link (tag, name, kind, reference, resolved, status, reason, base, layer, at, until),
 * appended to found (in a lean search, counted and appended only when kept); the edit (at,
 * at, text) made when text is not NULL (append_insert). The
 * Link is made as tuple.__new__(search.link, ...) makes it: plain_links has checked that
 * tuple.__new__ makes that type (a struct sequence, whose fields go past a tuple's items,
 * it refuses), so that its tp_alloc gives a tuple's layout of 11 items. */
static int
record_link(const Search *s, PyObject *tag, PyObject *name, PyObject *kind, PyObject *reference,
            PyObject *known, Py_ssize_t at, Py_ssize_t until, PyObject *text)
{
    PyObject *link_type = s->args[SEARCH_LINK], *found = s->args[SEARCH_FOUND];
    if (s->args[SEARCH_COUNTS] != Py_None) {
        int kept = counted(s, PyTuple_GET_ITEM(known, 0));
        if (kept < 0)
            return -1;
        if (!kept)
            return text == NULL ? 0 : append_insert(s, at, text);
    }
    PyObject *start = PyLong_FromSsize_t(at), *end = PyLong_FromSsize_t(until);
    PyObject *link = NULL;
    int done = -1;
    if (start == NULL || end == NULL)
        goto finally;
    link = link_type == (PyObject *)&PyTuple_Type ? PyTuple_New(11)
                                                  : ((PyTypeObject *)link_type)->tp_alloc((PyTypeObject *)link_type, 11);
    if (link == NULL)
        goto finally;
    /* The fields in LINK_FIELDS order, each put in its place by name (s->slot). */
    PyObject *fields[LINK_FIELD_COUNT] = {tag,
                                          name,
                                          kind,
                                          reference,
                                          PyTuple_GET_ITEM(known, 1),
                                          PyTuple_GET_ITEM(known, 0),
                                          PyTuple_GET_ITEM(known, 2),
                                          s->args[SEARCH_BASE],
                                          s->args[SEARCH_LAYER],
                                          start,
                                          end};
    for (int i = 0; i < LINK_FIELD_COUNT; i++)
        PyTuple_SET_ITEM(link, s->slot[i], Py_NewRef(fields[i]));
    if (PyList_Append(found, link) < 0)
        goto finally;
    done = text == NULL ? 0 : append_insert(s, at, text);
finally:
    Py_XDECREF(link);
    Py_XDECREF(start);
    Py_XDECREF(end);
    return done;
}

/* The most classifications a document's cache holds, emptied when full
   (rewriter.document.process.CLASSIFIED_MOST). */
#define CLASSIFIED_MOST 65536

/* The classification of reference (a new reference): from the cache (whatever it holds
 * there), or made and cached; TypeError unless it is (status, resolved, reason) with a
 * resolved URL that is a str or None. */
static PyObject *
classified_as(const Search *s, PyObject *reference)
{
    PyObject *classified = s->args[SEARCH_CLASSIFIED], *classify = s->args[SEARCH_CLASSIFY];
    PyObject *known = PyDict_GetItemWithError(classified, reference);
    if (known != NULL)
        Py_INCREF(known);
    else if (PyErr_Occurred())
        return NULL;
    else {
        known = PyObject_CallOneArg(classify, reference);
        if (known == NULL)
            return NULL;
        if (PyDict_GET_SIZE(classified) >= CLASSIFIED_MOST)
            PyDict_Clear(classified);
        if (PyDict_SetItem(classified, reference, known) < 0) {
            Py_DECREF(known);
            return NULL;
        }
    }
    if (!PyTuple_Check(known) || PyTuple_GET_SIZE(known) != 3 ||
        (PyTuple_GET_ITEM(known, 1) != Py_None && !PyUnicode_Check(PyTuple_GET_ITEM(known, 1)))) {
        PyErr_SetString(PyExc_TypeError, "a classification is (status, resolved, reason)");
        Py_DECREF(known);
        return NULL;
    }
    return known;
}

/* One URL or LAZY_URL value of a tag: recorded in found (and its edit in edits), skipped, or
 * handed back. 0 on success, -1 on error. */
static int
plain_value(const Text *t, PyObject *element, PyObject *tag, Taken *one, const Search *s, PyObject *left)
{
    const Attribute *a = &one->a;
    if (a->quote == QUOTE_VALUELESS)
        return hand_back(left, element, tag, one->name, a, one->code);
    Py_ssize_t vs = a->value_start, ve = a->value_end, length = ve - vs;
    int ampersands = 0, angles = 0;
    for (Py_ssize_t i = vs; i < ve; i++) {
        Py_UCS4 c = CH(t, i);
        if (c == 0)
            return hand_back(left, element, tag, one->name, a, one->code);
        if (c == '&') {
            if (!(i + 4 < ve && CH(t, i + 1) == 'a' && CH(t, i + 2) == 'm' && CH(t, i + 3) == 'p' &&
                  CH(t, i + 4) == ';'))
                return hand_back(left, element, tag, one->name, a, one->code);
            ampersands = 1;
        }
        else if (c == '<' || c == '>')
            angles = 1;
    }
    /* The reference's ends: an "&amp;" is no whitespace, so the value's ends are the text's. */
    Py_ssize_t first = 0, last = length;
    while (first < length && is_html_space(CH(t, vs + first)))
        first++;
    while (last > first && is_html_space(CH(t, vs + last - 1)))
        last--;
    if (one->code == CODE_LAZY_URL) {
        if (angles)
            return 0;
        for (Py_ssize_t i = vs + first; i < vs + last; i++)
            if (is_html_space(CH(t, i)))
                return 0;
    }
    PyObject *reference = PyUnicode_Substring(t->object, vs + first, vs + last);
    if (reference == NULL)
        return -1;
    if (ampersands) {
        PyObject *decoded = PyUnicode_Replace(reference, s_amp, s_ampersand, -1);
        Py_SETREF(reference, decoded);
        if (reference == NULL)
            return -1;
    }
    PyObject *prefix = NULL, *escaped = NULL;
    PyObject *known = classified_as(s, reference);
    if (known == NULL)
        goto error;
    PyObject *status = PyTuple_GET_ITEM(known, 0), *resolved = PyTuple_GET_ITEM(known, 1);
    int rewritten = is_rewritten(status);
    if (rewritten < 0)
        goto error;
    if (rewritten && resolved != Py_None) {
        int same = PyObject_RichCompareBool(resolved, reference, Py_EQ);
        if (same < 0)
            goto error;
        if (!same) { /* resolved is a str: classified_as says so */
            Py_ssize_t ends = PyUnicode_GET_LENGTH(reference) == 0
                                  ? 0
                                  : PyUnicode_Tailmatch(resolved, reference, 0, PY_SSIZE_T_MAX, 1);
            if (ends < 0)
                goto error;
            if (!ends)
                goto hand_back;
            Py_ssize_t size = PyUnicode_GET_LENGTH(resolved) - PyUnicode_GET_LENGTH(reference);
            prefix = PyUnicode_Substring(resolved, 0, size);
            if (prefix == NULL)
                goto error;
            if (a->quote == QUOTE_NONE) {
                int kind = PyUnicode_KIND(prefix);
                const void *data = PyUnicode_DATA(prefix);
                for (Py_ssize_t i = 0; i < size; i++)
                    if (needs_quotes(PyUnicode_READ(kind, data, i)))
                        goto hand_back;
            }
            escaped = escape_attribute(prefix, a->quote);
            if (escaped == NULL)
                goto error;
        }
    }
    /* The span: with "&amp;" decoded, the reference's ends are still at the raw text's first
     * and last (an "&amp;" that ends it ends where its ";" does). */
    int done = record_link(s, tag, one->name, s_url, reference, known, vs + first, vs + last, escaped);
    Py_XDECREF(escaped);
    Py_XDECREF(prefix);
    Py_DECREF(known);
    Py_DECREF(reference);
    return done;
hand_back:
    Py_XDECREF(prefix);
    Py_DECREF(known);
    Py_DECREF(reference);
    return hand_back(left, element, tag, one->name, a, one->code);
error:
    Py_XDECREF(escaped);
    Py_XDECREF(prefix);
    Py_XDECREF(known);
    Py_DECREF(reference);
    return -1;
}

/* for_context("srcset", url): each ASCII whitespace percent-encoded, a final "," as "%2C". */
static PyObject *
for_srcset(PyObject *url)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(url);
    int kind = PyUnicode_KIND(url);
    const void *data = PyUnicode_DATA(url);
    int spaces = 0;
    for (Py_ssize_t i = 0; i < n && !spaces; i++)
        spaces = is_html_space(PyUnicode_READ(kind, data, i));
    int comma = n > 0 && PyUnicode_READ(kind, data, n - 1) == ',';
    if (!spaces && !comma)
        return Py_NewRef(url);
    PyObject *out = Py_NewRef(url);
    static const char *const names[5][2] = {{" ", "%20"}, {"\t", "%09"}, {"\n", "%0A"}, {"\f", "%0C"}, {"\r", "%0D"}};
    for (int i = 0; i < 5 && spaces && out != NULL; i++) {
        PyObject *from = PyUnicode_FromString(names[i][0]), *to = PyUnicode_FromString(names[i][1]);
        PyObject *replaced = from != NULL && to != NULL ? PyUnicode_Replace(out, from, to, -1) : NULL;
        Py_XDECREF(from);
        Py_XDECREF(to);
        Py_SETREF(out, replaced);
    }
    if (out != NULL && PyUnicode_GET_LENGTH(out) > 0 &&
        PyUnicode_READ_CHAR(out, PyUnicode_GET_LENGTH(out) - 1) == ',') {
        PyObject *head = PyUnicode_Substring(out, 0, PyUnicode_GET_LENGTH(out) - 1);
        PyObject *joined = head == NULL ? NULL : PyUnicode_FromFormat("%U%%2C", head);
        Py_XDECREF(head);
        Py_SETREF(out, joined);
    }
    return out;
}

/* One SRCSET value (HTML §4.8.4.3.10): each candidate's URL classified and recorded, and its
 * edit made, as the engine's general path would; or the value handed back (no quotes, "&" or
 * NUL). 0 on success, -1 on error. */
static int
srcset_value(const Text *t, PyObject *element, PyObject *tag, Taken *one, const Search *s, PyObject *left)
{
    const Attribute *a = &one->a;
    Py_ssize_t vs = a->value_start, ve = a->value_end;
    if (a->quote != QUOTE_DOUBLE && a->quote != QUOTE_SINGLE)
        return hand_back(left, element, tag, one->name, a, one->code);
    for (Py_ssize_t i = vs; i < ve; i++) {
        Py_UCS4 c = CH(t, i);
        if (c == 0 || c == '&')
            return hand_back(left, element, tag, one->name, a, one->code);
    }
    Py_ssize_t p = vs;
    while (1) {
        while (p < ve && (is_html_space(CH(t, p)) || CH(t, p) == ','))
            p++;
        if (p >= ve)
            return 0;
        Py_ssize_t start = p;
        while (p < ve && !is_html_space(CH(t, p)))
            p++;
        Py_ssize_t end = p;
        int trailing = CH(t, end - 1) == ',';
        if (trailing) /* trailing commas: no descriptors */
            while (end > start && CH(t, end - 1) == ',')
                end--;
        else { /* descriptors: to a comma outside parentheses */
            while (p < ve) {
                Py_UCS4 c = CH(t, p);
                if (c == ',')
                    break;
                p++;
                if (c == '(') {
                    while (p < ve && CH(t, p) != ')')
                        p++;
                    if (p < ve)
                        p++;
                }
            }
            if (p < ve)
                p++; /* the comma */
        }
        PyObject *reference = PyUnicode_Substring(t->object, start, end);
        if (reference == NULL)
            return -1;
        PyObject *known = classified_as(s, reference);
        if (known == NULL) {
            Py_DECREF(reference);
            return -1;
        }
        PyObject *status = PyTuple_GET_ITEM(known, 0), *resolved = PyTuple_GET_ITEM(known, 1), *text = NULL;
        Py_ssize_t edit_end = start;
        /* The link first, then its edit, as the twin: the status's comparison may raise. */
        if (record_link(s, tag, one->name, s_srcset, reference, known, start, end, NULL) < 0)
            goto error;
        int rewritten = is_rewritten(status);
        int same = rewritten > 0 && resolved != Py_None ? PyObject_RichCompareBool(resolved, reference, Py_EQ) : 1;
        if (rewritten < 0 || same < 0)
            goto error;
        if (rewritten && !same) { /* resolved is a str: classified_as says so */
            PyObject *new = for_srcset(resolved);
            if (new == NULL)
                goto error;
            Py_ssize_t length = PyUnicode_GET_LENGTH(reference);
            Py_ssize_t ends = length == 0 ? 0 : PyUnicode_Tailmatch(new, reference, 0, PY_SSIZE_T_MAX, 1);
            PyObject *piece = ends < 0 ? NULL
                              : ends   ? PyUnicode_Substring(new, 0, PyUnicode_GET_LENGTH(new) - length)
                                       : Py_NewRef(new);
            if (!ends)
                edit_end = end; /* not a prefix: the whole URL written again */
            Py_DECREF(new);
            if (piece == NULL)
                goto error;
            text = escape_attribute(piece, a->quote);
            Py_DECREF(piece);
            if (text == NULL)
                goto error;
        }
        int done = text == NULL ? 0 : append_edit(s->args[SEARCH_EDITS], start, edit_end, text);
        Py_XDECREF(text);
        Py_DECREF(known);
        Py_DECREF(reference);
        if (done < 0)
            return -1;
        continue;
    error:
        Py_XDECREF(text);
        Py_DECREF(known);
        Py_DECREF(reference);
        return -1;
    }
}

PyDoc_STRVAR(plain_links_doc,
             "plain_links(search) -> list\n\n"
             "The engine's loop over plain link values, search a LinkSearch (see rewriter.html.plain.plain_links).");

/* The Link field names of link_type (its _fields) mapped to positions in slot, as LINK_FIELDS
 * orders them: once for each _fields tuple met (a run meets one), not per link. -1 with
 * TypeError unless _fields is a tuple of exactly LINK_FIELDS's names, in any order. */
static PyObject *cached_fields;
static Py_ssize_t cached_slot[LINK_FIELD_COUNT];

static int
link_slots(PyObject *link_type, Py_ssize_t *slot)
{
    PyObject *fields = PyObject_GetAttr(link_type, s_fields);
    if (fields == NULL)
        return -1;
    if (fields == cached_fields) {
        memcpy(slot, cached_slot, sizeof(cached_slot));
        Py_DECREF(fields);
        return 0;
    }
    int good = PyTuple_CheckExact(fields) && PyTuple_GET_SIZE(fields) == LINK_FIELD_COUNT;
    for (int i = 0; i < LINK_FIELD_COUNT; i++)
        slot[i] = -1;
    for (Py_ssize_t j = 0; good && j < LINK_FIELD_COUNT; j++) {
        PyObject *item = PyTuple_GET_ITEM(fields, j);
        int i = 0;
        if (!PyUnicode_CheckExact(item))
            good = 0;
        else
            while (i < LINK_FIELD_COUNT && item != link_names[i] && PyUnicode_Compare(item, link_names[i]) != 0)
                i++;
        if (!good || i == LINK_FIELD_COUNT || slot[i] != -1)
            good = 0;
        else
            slot[i] = j;
    }
    if (!good) {
        Py_DECREF(fields);
        PyErr_SetString(PyExc_TypeError, "plain_links: a link type is a named tuple with Link's fields");
        return -1;
    }
    Py_XSETREF(cached_fields, fields); /* the reference is the cache's now */
    memcpy(cached_slot, slot, sizeof(cached_slot));
    return 0;
}

static PyObject *plain_links_of(Search *s);

static PyObject *
plain_links(PyObject *module, PyObject *search)
{
    Search s;
    int i = 0;
    if ((s.prefixes = PyDict_New()) == NULL)
        return NULL;
    for (; i < SEARCH_FIELD_COUNT; i++)
        if ((s.args[i] = PyObject_GetAttr(search, search_names[i])) == NULL)
            break;
    PyObject *left = i == SEARCH_FIELD_COUNT ? plain_links_of(&s) : NULL;
    while (i > 0)
        Py_DECREF(s.args[--i]);
    Py_DECREF(s.prefixes);
    return left;
}

static PyObject *
plain_links_of(Search *s)
{
    Text t;
    PyObject *const *args = s->args;
    if (text_init(&t, args[SEARCH_TEXT]) < 0)
        return NULL;
    PyObject *line_starts = args[SEARCH_LINE_STARTS], *skip = args[SEARCH_SKIP], *html = args[SEARCH_HTML];
    PyObject *html_tables = args[SEARCH_HTML_TABLES], *foreign_tables = args[SEARCH_FOREIGN_TABLES];
    PyObject *table_of = args[SEARCH_TABLE_OF];
    /* Exactly dicts and lists: a subclass's methods, which the twin would call, are not. */
    if (!PyDict_CheckExact(html_tables) || !PyDict_CheckExact(foreign_tables) ||
        !PyDict_CheckExact(args[SEARCH_CLASSIFIED]) || !PyList_CheckExact(args[SEARCH_FOUND]) ||
        !PyList_CheckExact(args[SEARCH_EDITS]) ||
        (args[SEARCH_COUNTS] != Py_None && !PyDict_CheckExact(args[SEARCH_COUNTS])) ||
        !(PySet_CheckExact(args[SEARCH_KEPT]) || PyFrozenSet_CheckExact(args[SEARCH_KEPT])) ||
        !((args[SEARCH_INSERTS] == Py_None && args[SEARCH_INSERT_TEXTS] == Py_None) ||
          (PyByteArray_CheckExact(args[SEARCH_INSERTS]) && PyList_CheckExact(args[SEARCH_INSERT_TEXTS])))) {
        PyErr_SetString(PyExc_TypeError, "plain_links: the tables and the cache are dicts, found and edits lists, "
                                         "counts None or a dict, kept a set, inserts and insert_texts None or a "
                                         "bytearray and a list");
        return NULL;
    }
    if (link_slots(args[SEARCH_LINK], s->slot) < 0)
        return NULL;
    /* tuple.__new__(search.link): TypeError unless it is a type tuple.__new__ makes (see record_link). */
    PyObject *probe = PyObject_CallMethodOneArg((PyObject *)&PyTuple_Type, s_new, args[SEARCH_LINK]);
    if (probe == NULL)
        return NULL;
    Py_DECREF(probe);
    /* Iterated as the twin's loop iterates it, each element a reference of ours: a callback
     * may empty or change the list (which would free an element borrowed from it). */
    PyObject *elements = PyObject_GetIter(args[SEARCH_ELEMENTS]);
    if (elements == NULL)
        return NULL;
    PyObject *left = PyList_New(0);
    unsigned char *seen = PyMem_Calloc((size_t)(t.n >> 3) + 1, 1);
    Taken *taken = NULL;
    Py_ssize_t taken_count = 0, taken_size = 0;
    PyObject *element = NULL, *tag = NULL, *namespace = NULL, *codes = NULL;
    if (left == NULL || seen == NULL) {
        if (seen == NULL)
            PyErr_NoMemory();
        goto error;
    }
    for (;;) {
        Py_XSETREF(element, PyIter_Next(elements));
        if (element == NULL) {
            if (PyErr_Occurred())
                goto error;
            break;
        }
        Py_ssize_t offset = element_offset(element, line_starts, t.n);
        if (offset == -2)
            continue;
        if (offset < 0)
            goto error;
        if (seen[offset >> 3] & (1 << (offset & 7)))
            continue;
        seen[offset >> 3] |= (unsigned char)(1 << (offset & 7));
        if (element == skip)
            continue;
        namespace = PyObject_GetAttr(element, s_namespace);
        if (namespace == NULL)
            goto error;
        tag = namespace == html ? html_tag(&t, element, offset) : PyObject_GetAttr(element, s_tag);
        if (tag == NULL)
            goto error;
        if (namespace == html)
            codes = PyDict_GetItemWithError(html_tables, tag);
        else {
            PyObject *key = PyTuple_Pack(2, namespace, tag);
            if (key == NULL)
                goto error;
            codes = PyDict_GetItemWithError(foreign_tables, key);
            Py_DECREF(key);
        }
        if (codes != NULL)
            Py_INCREF(codes);
        else if (PyErr_Occurred())
            goto error;
        else if ((codes = PyObject_CallFunctionObjArgs(table_of, namespace, tag, NULL)) == NULL)
            goto error;
        if (codes == Py_None) {
            if (hand_back(left, element, tag, NULL, NULL, 0) < 0)
                goto error;
            goto next;
        }
        if (!PyDict_CheckExact(codes)) {
            PyErr_Format(PyExc_TypeError, "a link table is a dict or None, not %.100s", Py_TYPE(codes)->tp_name);
            goto error;
        }
        Py_ssize_t position = tag_name_end(&t, offset);
        if (position < 0) {
            no_start_tag(offset);
            goto error;
        }
        int general = 0;
        Attribute a;
        while (next_attribute(&t, &position, &a)) {
            int irregular = 0;
            PyObject *name = attribute_name(&t, &a, &irregular);
            if (name == NULL)
                goto error;
            if (irregular) { /* the tree reads it otherwise (U+FFFD): no link */
                Py_DECREF(name);
                continue;
            }
            PyObject *value = PyDict_GetItemWithError(codes, name);
            if (value == NULL || value == Py_None) { /* codes.get(name) is None: not a link */
                Py_DECREF(name);
                if (PyErr_Occurred())
                    goto error;
                continue;
            }
            int repeated = 0;
            for (Py_ssize_t k = 0; k < taken_count && !repeated; k++) {
                PyObject *other = taken[k].name;
                repeated = other == name || (PyUnicode_GET_LENGTH(other) == PyUnicode_GET_LENGTH(name) &&
                                             PyUnicode_Compare(other, name) == 0);
            }
            if (repeated) { /* the first of duplicate names wins */
                Py_DECREF(name);
                continue;
            }
            long code = PyLong_CheckExact(value) ? PyLong_AsLong(value) : -1;
            if (code == -1 && PyErr_Occurred())
                PyErr_Clear();
            if (code < CODE_URL || code > CODE_SRCSET) {
                Py_DECREF(name);
                Py_INCREF(value); /* its repr may run code that takes it out of codes */
                PyErr_Format(PyExc_ValueError, "%R is no code of a link table", value);
                Py_DECREF(value);
                goto error;
            }
            if (taken_count == taken_size) {
                Py_ssize_t size = taken_size ? 2 * taken_size : 8;
                Taken *grown = PyMem_Resize(taken, Taken, size);
                if (grown == NULL) {
                    Py_DECREF(name);
                    PyErr_NoMemory();
                    goto error;
                }
                taken = grown;
                taken_size = size;
            }
            taken[taken_count].name = name; /* the reference is the array's now */
            taken[taken_count].a = a;
            taken[taken_count].code = code;
            taken_count++;
            if (code == CODE_OTHER || (code == CODE_STYLE && style_may_hold_urls(&t, &a)))
                general = 1;
        }
        if (general) {
            if (hand_back(left, element, tag, NULL, NULL, 0) < 0)
                goto error;
        }
        else {
            for (Py_ssize_t k = 0; k < taken_count; k++) {
                if (taken[k].code == CODE_STYLE)
                    continue;
                int done = taken[k].code == CODE_SRCSET ? srcset_value(&t, element, tag, &taken[k], s, left)
                                                        : plain_value(&t, element, tag, &taken[k], s, left);
                if (done < 0)
                    goto error;
            }
        }
    next:
        for (Py_ssize_t k = 0; k < taken_count; k++)
            Py_DECREF(taken[k].name);
        taken_count = 0;
        Py_CLEAR(tag);
        Py_CLEAR(namespace);
        Py_CLEAR(codes);
    }
    PyMem_Free(taken);
    PyMem_Free(seen);
    Py_DECREF(elements);
    return left;
error:
    for (Py_ssize_t k = 0; k < taken_count; k++)
        Py_DECREF(taken[k].name);
    PyMem_Free(taken);
    PyMem_Free(seen);
    Py_XDECREF(element);
    Py_XDECREF(tag);
    Py_XDECREF(namespace);
    Py_XDECREF(codes);
    Py_DECREF(elements);
    Py_XDECREF(left);
    return NULL;
}

PyDoc_STRVAR(named_start_tags_doc,
             "named_start_tags(text, elements, line_starts, name) -> list\n\n"
             "The elements whose start tag in text has the tag name name (see rewriter.html.plain).");

static PyObject *
named_start_tags(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Text t, nt;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "named_start_tags takes 4 arguments");
        return NULL;
    }
    if (text_init(&t, args[0]) < 0 || text_init(&nt, args[3]) < 0)
        return NULL;
    /* Iterated as the twin iterates it, each element a reference of ours (as in plain_links). */
    PyObject *elements = PyObject_GetIter(args[1]);
    if (elements == NULL)
        return NULL;
    PyObject *found = PyList_New(0), *element = NULL;
    if (found == NULL) {
        Py_DECREF(elements);
        return NULL;
    }
    Py_ssize_t size = nt.n;
    for (;;) {
        Py_XSETREF(element, PyIter_Next(elements));
        if (element == NULL) {
            if (PyErr_Occurred())
                goto error;
            break;
        }
        Py_ssize_t offset = element_offset(element, args[2], t.n);
        if (offset == -2)
            continue;
        if (offset < 0)
            goto error;
        if (size > t.n - offset - 1) /* offset < t.n: no overflow */
            continue;
        Py_ssize_t end = offset + 1 + size;
        int same = 1;
        for (Py_ssize_t i = 0; i < size && same; i++) {
            Py_UCS4 c = CH(&t, offset + 1 + i);
            if (c >= 'A' && c <= 'Z')
                c += 'a' - 'A';
            same = c < 0x80 && c == CH(&nt, i);
        }
        if (!same || (end < t.n && !is_html_space(CH(&t, end)) && CH(&t, end) != '/' && CH(&t, end) != '>'))
            continue;
        if (PyList_Append(found, element) < 0)
            goto error;
    }
    Py_DECREF(elements);
    return found;
error:
    Py_XDECREF(element);
    Py_DECREF(elements);
    Py_DECREF(found);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* Raw text's end (HTML §13.2.5.12)                                          */
/* ------------------------------------------------------------------------ */

/* Whether text[at:at + len(name)] lowered is name, as str.lower() compares. */
static int
lowered_equals(const Text *t, Py_ssize_t at, PyObject *name, const Text *nt)
{
    Py_ssize_t length = nt->n;
    Py_ssize_t end = length < t->n - at ? at + length : t->n; /* at <= t->n: no overflow */
    int ascii = 1;
    for (Py_ssize_t i = at; i < end; i++) {
        if (CH(t, i) >= 0x80) {
            ascii = 0;
            break;
        }
    }
    if (ascii) {
        if (end - at != length)
            return 0;
        for (Py_ssize_t i = 0; i < length; i++) {
            Py_UCS4 c = CH(t, at + i);
            if (c >= 'A' && c <= 'Z')
                c += 'a' - 'A';
            if (c != CH(nt, i))
                return 0;
        }
        return 1;
    }
    /* Outside ASCII, str.lower() itself (U+212A KELVIN SIGN lowers to "k"). */
    PyObject *piece = PyUnicode_Substring(t->object, at, end);
    if (piece == NULL)
        return -1;
    PyObject *lowered = PyObject_CallMethodNoArgs(piece, s_lower);
    Py_DECREF(piece);
    if (lowered == NULL)
        return -1;
    int equal = PyUnicode_Compare(lowered, name) == 0;
    Py_DECREF(lowered);
    if (equal == 0 && PyErr_Occurred())
        return -1;
    return equal;
}

PyDoc_STRVAR(end_tag_doc, "end_tag(text, name, start) -> int\n\nWhere raw text that starts at start ends.");

static PyObject *
end_tag(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Text t, nt;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "end_tag takes text, name and start");
        return NULL;
    }
    if (text_init(&t, args[0]) < 0 || text_init(&nt, args[1]) < 0)
        return NULL;
    Py_ssize_t start;
    if (find_start(args[2], t.n, &start) < 0) /* text.find("</", start) in the twin */
        return NULL;
    Py_ssize_t position = start > t.n ? -1 : find_pair_released(&t, start, '<', '/');
    while (position >= 0) {
        if (nt.n + 2 < t.n - position) { /* position + 2 + len(name) < len(text), without overflow */
            Py_UCS4 c = CH(&t, position + 2 + nt.n);
            if (is_html_space(c) || c == '/' || c == '>') {
                int equal = lowered_equals(&t, position + 2, args[1], &nt);
                if (equal < 0)
                    return NULL;
                if (equal)
                    return PyLong_FromSsize_t(position);
            }
        }
        position = find_pair_released(&t, position + 2, '<', '/');
    }
    return PyLong_FromSsize_t(t.n);
}

/* ------------------------------------------------------------------------ */
/* UTF-8 byte offsets                                                        */
/* ------------------------------------------------------------------------ */

/* The UTF-8 length of text[start:end]; *bad is -1, or the offset of the first surrogate that
 * the escape handler does not take (the length is then meaningless). Plain C: it runs
 * without the GIL. */
static Py_ssize_t
utf8_count(const Text *t, Py_ssize_t start, Py_ssize_t end, int escaped, Py_ssize_t *bad)
{
    /* Counted in blocks with narrow counters, so that the compiler vectorizes the loops
     * (a 64-bit counter per character ran at 0.24 ns a character; these, about half that). */
    Py_ssize_t total = end - start;
    int surrogates = 0;
    *bad = -1;
    if (t->kind == PyUnicode_1BYTE_KIND) {
        const Py_UCS1 *d = (const Py_UCS1 *)t->data;
        for (Py_ssize_t i = start; i < end;) {
            Py_ssize_t stop = end - i > 4096 ? i + 4096 : end;
            uint16_t extra = 0;
            for (; i < stop; i++)
                extra += (uint16_t)(d[i] >> 7);
            total += extra;
        }
    }
    else if (t->kind == PyUnicode_2BYTE_KIND) {
        const Py_UCS2 *d = (const Py_UCS2 *)t->data;
        uint16_t found = 0;
        for (Py_ssize_t i = start; i < end;) {
            Py_ssize_t stop = end - i > 4096 ? i + 4096 : end;
            uint16_t extra = 0;
            for (; i < stop; i++) {
                Py_UCS2 c = d[i];
                extra += (uint16_t)((c >= 0x80) + (c >= 0x800));
                found |= (uint16_t)((c & 0xF800) == 0xD800);
            }
            total += extra;
        }
        surrogates = found != 0;
    }
    else {
        const Py_UCS4 *d = (const Py_UCS4 *)t->data;
        uint32_t found = 0;
        for (Py_ssize_t i = start; i < end;) {
            Py_ssize_t stop = end - i > 4096 ? i + 4096 : end;
            uint32_t extra = 0;
            for (; i < stop; i++) {
                Py_UCS4 c = d[i];
                extra += (uint32_t)((c >= 0x80) + (c >= 0x800) + (c >= 0x10000));
                found |= (uint32_t)((c & 0xFFFFF800) == 0xD800);
            }
            total += extra;
        }
        surrogates = found != 0;
    }
    if (surrogates) { /* each counted 3 above: one byte when escaped (U+DC00-U+DCFF only) */
        for (Py_ssize_t i = start; i < end; i++) {
            Py_UCS4 c = CH(t, i);
            if (c < 0xD800 || c > 0xDFFF || !escaped)
                continue;
            if (c < 0xDC00 || c > 0xDCFF) {
                *bad = i;
                return 0;
            }
            total -= 2;
        }
    }
    return total;
}

/* UnicodeEncodeError for the surrogate at offset at, which the escape handler does not take. */
static void
surrogate_error(const Text *t, Py_ssize_t at)
{
    PyObject *error =
        PyObject_CallFunction(PyExc_UnicodeEncodeError, "sOnns", "utf-8", t->object, at, at + 1, "surrogates not allowed");
    if (error != NULL) {
        PyErr_SetObject(PyExc_UnicodeEncodeError, error);
        Py_DECREF(error);
    }
}

/* Adds to *bytes the UTF-8 length of text[start:end]; -1 with UnicodeEncodeError for a
 * surrogate that the escape handler does not take. */
static int
utf8_length(const Text *t, Py_ssize_t start, Py_ssize_t end, int escaped, Py_ssize_t *bytes)
{
    Py_ssize_t bad, total = utf8_count(t, start, end, escaped, &bad);
    if (bad >= 0) {
        surrogate_error(t, bad);
        return -1;
    }
    *bytes += total;
    return 0;
}

PyDoc_STRVAR(utf8_offsets_doc,
             "utf8_offsets(text, offsets, escaped) -> list\n\nThe UTF-8 byte offset of each character offset.");

static PyObject *
utf8_offsets(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Text t;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "utf8_offsets takes text, offsets and escaped");
        return NULL;
    }
    if (text_init(&t, args[0]) < 0)
        return NULL;
    int escaped = PyObject_IsTrue(args[2]);
    if (escaped < 0)
        return NULL;
    /* Iterated as the twin iterates it: an offset's __index__ may change the list. */
    PyObject *offsets = PyObject_GetIter(args[1]);
    if (offsets == NULL)
        return NULL;
    PyObject *out = PyList_New(0), *item;
    if (out == NULL) {
        Py_DECREF(offsets);
        return NULL;
    }
    Py_ssize_t previous_text = 0, previous_byte = 0;
    while ((item = PyIter_Next(offsets)) != NULL) {
        Py_ssize_t offset;
        int converted = offset_argument(item, &offset);
        Py_DECREF(item);
        if (converted < 0)
            goto error;
        if (offset < previous_text || offset > t.n) {
            PyErr_SetString(PyExc_ValueError, "offsets must be ascending and within the text");
            goto error;
        }
        if (utf8_length(&t, previous_text, offset, escaped, &previous_byte) < 0)
            goto error;
        previous_text = offset;
        PyObject *value = PyLong_FromSsize_t(previous_byte);
        if (value == NULL || PyList_Append(out, value) < 0) {
            Py_XDECREF(value);
            goto error;
        }
        Py_DECREF(value);
    }
    if (PyErr_Occurred())
        goto error;
    Py_DECREF(offsets);
    return out;
error:
    Py_DECREF(offsets);
    Py_DECREF(out);
    return NULL;
}

/* utf8_splice: a UTF-8 document's bytes with text edits made (rewriter/document/encoding.py) */

typedef struct {
    Py_ssize_t start, end, index;
    PyObject *new; /* borrowed from the edits, a tuple of utf8_splice's own */
    Py_ssize_t byte_start, byte_end;
    const char *bytes; /* the new text's UTF-8 (of encoded[index], held), NULL for an edit that does not stand */
    Py_ssize_t size;
} Edit;

static int
edit_order(const void *a, const void *b)
{
    const Edit *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static int
offset_order(const void *a, const void *b)
{
    Py_ssize_t x = *(const Py_ssize_t *)a, y = *(const Py_ssize_t *)b;
    return x < y ? -1 : x > y;
}

/* The byte offset of text offset at, from the sorted positions and their byte offsets. */
static Py_ssize_t
byte_of(const Py_ssize_t *positions, const Py_ssize_t *bytes, Py_ssize_t count, Py_ssize_t at)
{
    Py_ssize_t low = 0, high = count - 1;
    while (low < high) {
        Py_ssize_t middle = (low + high) / 2;
        if (positions[middle] < at)
            low = middle + 1;
        else
            high = middle;
    }
    return bytes[low];
}

PyDoc_STRVAR(utf8_splice_doc, "utf8_splice(text, body, edits, escaped, encode) -> bytes\n\n"
                              "body with the text edits made (see rewriter.document.encoding.utf8_splice).");

static PyObject *
utf8_splice(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Text t;
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "utf8_splice takes text, body, edits, escaped and encode");
        return NULL;
    }
    if (text_init(&t, args[0]) < 0)
        return NULL;
    PyObject *body = args[1], *encode = args[4];
    if (!PyBytes_Check(body)) {
        PyErr_SetString(PyExc_TypeError, "utf8_splice: body is bytes");
        return NULL;
    }
    int escaped = PyObject_IsTrue(args[3]);
    if (escaped < 0)
        return NULL;
    /* A tuple of its own, as the twin sorts a copy: encode, or an offset's __index__, may
     * empty the caller's list, and each new text is read after those run. */
    PyObject *edits = PySequence_Tuple(args[2]);
    if (edits == NULL)
        return NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(edits);
    if (count > (PY_SSIZE_T_MAX - 1) / 2) { /* 2 * count + 1 positions */
        Py_DECREF(edits);
        return PyErr_NoMemory();
    }
    Edit *all = PyMem_New(Edit, count > 0 ? count : 1);
    Py_ssize_t *positions = PyMem_New(Py_ssize_t, 2 * count + 1);
    Py_ssize_t *bytes = PyMem_New(Py_ssize_t, 2 * count + 1);
    PyObject **encoded = PyMem_New(PyObject *, count > 0 ? count : 1);
    PyObject *out = NULL;
    if (all == NULL || positions == NULL || bytes == NULL || encoded == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < count; i++)
        encoded[i] = NULL;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *edit = PyTuple_GET_ITEM(edits, i);
        if (!PyTuple_Check(edit) || PyTuple_GET_SIZE(edit) != 3 || !PyUnicode_Check(PyTuple_GET_ITEM(edit, 2))) {
            PyErr_SetString(PyExc_TypeError, "an edit is (start, end, new text)");
            goto done;
        }
        /* Clamped, an offset past either end is refused below, as any outside the text. */
        if (offset_argument(PyTuple_GET_ITEM(edit, 0), &all[i].start) < 0 ||
            offset_argument(PyTuple_GET_ITEM(edit, 1), &all[i].end) < 0)
            goto done;
        all[i].index = i;
        all[i].new = PyTuple_GET_ITEM(edit, 2);
        positions[2 * i] = all[i].start;
        positions[2 * i + 1] = all[i].end;
    }
    /* Sorted and counted in plain C: without the GIL for a long text. It stops where the
     * loop with the GIL stopped, at the first offset outside the text or the first surrogate
     * the escape handler does not take, and the error is raised once the GIL is back. */
    Py_ssize_t previous_text = 0, previous_byte = 0, outside = -1, bad = -1;
    PyThreadState *state = (size_t)t.n * (size_t)t.kind > RELEASE_AT ? PyEval_SaveThread() : NULL;
    qsort(all, (size_t)count, sizeof(Edit), edit_order);
    qsort(positions, (size_t)(2 * count), sizeof(Py_ssize_t), offset_order);
    for (Py_ssize_t i = 0; i < 2 * count; i++) {
        if (positions[i] < 0 || positions[i] > t.n) {
            outside = i;
            break;
        }
        previous_byte += utf8_count(&t, previous_text, positions[i], escaped, &bad);
        if (bad >= 0)
            break;
        previous_text = positions[i];
        bytes[i] = previous_byte;
    }
    if (state != NULL)
        PyEval_RestoreThread(state);
    if (outside >= 0) {
        PyErr_SetString(PyExc_ValueError, "offsets must be ascending and within the text");
        goto done;
    }
    if (bad >= 0) {
        surrogate_error(&t, bad);
        goto done;
    }
    /* The pieces: what is kept of body between the edits that stand, and their new bytes
     * (body sliced as Python slices: past its end, nothing). */
    Py_ssize_t length = PyBytes_GET_SIZE(body);
    Py_ssize_t size = 0, last = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        Edit *e = &all[i];
        e->bytes = NULL;
        e->byte_start = byte_of(positions, bytes, 2 * count, e->start);
        e->byte_end = byte_of(positions, bytes, 2 * count, e->end);
        if (e->byte_start < last)
            continue; /* edits never overlap; should one, the first stands */
        if (PyUnicode_IS_ASCII(e->new))
            encoded[i] = Py_NewRef(e->new);
        else {
            encoded[i] = PyObject_CallOneArg(encode, e->new);
            if (encoded[i] == NULL)
                goto done;
            if (!PyBytes_Check(encoded[i])) {
                PyErr_SetString(PyExc_TypeError, "utf8_splice: encode gives bytes");
                goto done;
            }
        }
        Py_ssize_t until = e->byte_start < length ? e->byte_start : length;
        Py_ssize_t kept = until > last ? until - last : 0;
        Py_ssize_t new_size = PyBytes_Check(encoded[i]) ? PyBytes_GET_SIZE(encoded[i]) : PyUnicode_GET_LENGTH(encoded[i]);
        e->bytes = PyBytes_Check(encoded[i]) ? PyBytes_AS_STRING(encoded[i]) : (const char *)PyUnicode_DATA(encoded[i]);
        e->size = new_size;
        /* encode may give one object for every edit: the sizes' sum is no object's size. */
        if (kept > PY_SSIZE_T_MAX - size || new_size > PY_SSIZE_T_MAX - size - kept) {
            PyErr_SetString(PyExc_OverflowError, "utf8_splice: the result is too long");
            goto done;
        }
        size += kept + new_size;
        last = e->byte_end;
    }
    if (length > last && length - last > PY_SSIZE_T_MAX - size) {
        PyErr_SetString(PyExc_OverflowError, "utf8_splice: the result is too long");
        goto done;
    }
    size += length > last ? length - last : 0;
    out = PyBytes_FromStringAndSize(NULL, size);
    if (out == NULL)
        goto done;
    char *to = PyBytes_AS_STRING(out);
    const char *from = PyBytes_AS_STRING(body);
    /* Copied in plain C, from buffers held until the end (body, the encoded texts) into out,
     * ours alone: without the GIL for a long text. */
    state = (size_t)length > RELEASE_AT ? PyEval_SaveThread() : NULL;
    last = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        Edit *e = &all[i];
        if (e->bytes == NULL)
            continue;
        Py_ssize_t until = e->byte_start < length ? e->byte_start : length;
        if (until > last) {
            memcpy(to, from + last, (size_t)(until - last));
            to += until - last;
        }
        memcpy(to, e->bytes, (size_t)e->size);
        to += e->size;
        last = e->byte_end;
    }
    if (length > last)
        memcpy(to, from + last, (size_t)(length - last));
    if (state != NULL)
        PyEval_RestoreThread(state);
done:
    if (encoded != NULL && all != NULL && positions != NULL && bytes != NULL)
        for (Py_ssize_t i = 0; i < count; i++)
            Py_XDECREF(encoded[i]);
    PyMem_Free(all);
    PyMem_Free(positions);
    PyMem_Free(bytes);
    PyMem_Free(encoded);
    Py_DECREF(edits);
    return out;
}

/* ------------------------------------------------------------------------ */
/* CSS URLs (CSS Syntax Level 3 §4.3; see rewriter/css.py, the reference)   */
/* ------------------------------------------------------------------------ */

typedef struct {
    Py_UCS4 closer;
    int image_set;
} Frame;

typedef struct {
    Text t;
    PyObject *out;
    Frame *stack;
    Py_ssize_t depth, size;
} Css;

static inline int
css_space(Py_UCS4 c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

static inline int
css_newline(Py_UCS4 c)
{
    return c == '\n' || c == '\r' || c == '\f';
}

static inline int
is_hex(Py_UCS4 c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static inline int
hex_value(Py_UCS4 c)
{
    return c <= '9' ? (int)(c - '0') : (int)((c | 0x20) - 'a' + 10);
}

/* §4.2 name code point: letters, digits, "_", "-", NUL and U+0080 and above. */
static inline int
is_name(Py_UCS4 c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c >= 0x80 || c == 0;
}

/* Whether css[at:at + len(lower)] lowered is lower (ASCII letters and "-": str.lower()
 * agrees, but for U+212A KELVIN SIGN, which lowers to "k"). */
static int
css_lowered_is(const Text *t, Py_ssize_t at, const char *lower)
{
    Py_ssize_t length = (Py_ssize_t)strlen(lower);
    if (at < 0 || at + length > t->n)
        return 0;
    for (Py_ssize_t i = 0; i < length; i++) {
        Py_UCS4 c = CH(t, at + i);
        if (c == 0x212A)
            c = 'k';
        else if (c >= 'A' && c <= 'Z')
            c += 'a' - 'A';
        if (c != (Py_UCS4)(unsigned char)lower[i])
            return 0;
    }
    return 1;
}

static Py_ssize_t
skip_space(const Text *t, Py_ssize_t i)
{
    while (i < t->n && css_space(CH(t, i)))
        i++;
    return i;
}

/* Past a hex escape's digits (1 to 6, the first at i) and its optional whitespace. */
static Py_ssize_t
past_hex_escape(const Text *t, Py_ssize_t i)
{
    Py_ssize_t digits = 0;
    while (i < t->n && digits < 6 && is_hex(CH(t, i))) {
        i++;
        digits++;
    }
    if (i + 1 < t->n && CH(t, i) == '\r' && CH(t, i + 1) == '\n')
        return i + 2;
    if (i < t->n && css_space(CH(t, i)))
        return i + 1;
    return i;
}

/* §4.3.7 and §4.3.5: the value of source text css[start:end], escapes decoded, NUL and
 * surrogates read as U+FFFD; a "\" at the very end gives at_eof (0: nothing). */
static PyObject *
css_decode(const Text *t, Py_ssize_t start, Py_ssize_t end, Py_UCS4 at_eof)
{
    int plain = 1;
    for (Py_ssize_t i = start; i < end && plain; i++) {
        Py_UCS4 c = CH(t, i);
        if (c == '\\' || c == 0 || (c >= 0xD800 && c <= 0xDFFF))
            plain = 0;
    }
    if (plain)
        return PyUnicode_Substring(t->object, start, end);
    Py_ssize_t length = end - start;
    Py_UCS4 *buffer = PyMem_New(Py_UCS4, length > 0 ? length : 1);
    if (buffer == NULL)
        return PyErr_NoMemory();
    Py_ssize_t w = 0, i = start;
    while (i < end) {
        Py_UCS4 c = CH(t, i);
        if (c == 0 || (c >= 0xD800 && c <= 0xDFFF)) {
            buffer[w++] = 0xFFFD;
            i++;
            continue;
        }
        if (c != '\\') {
            buffer[w++] = c;
            i++;
            continue;
        }
        if (i + 1 >= end) { /* "\" at the end */
            if (at_eof)
                buffer[w++] = at_eof;
            i++;
            continue;
        }
        Py_UCS4 d = CH(t, i + 1);
        if (is_hex(d)) {
            Py_ssize_t j = i + 1, digits = 0;
            unsigned long code = 0;
            while (j < end && digits < 6 && is_hex(CH(t, j))) {
                code = code * 16 + (unsigned long)hex_value(CH(t, j));
                j++;
                digits++;
            }
            if (j + 1 < end && CH(t, j) == '\r' && CH(t, j + 1) == '\n')
                j += 2;
            else if (j < end && css_space(CH(t, j)))
                j++;
            buffer[w++] = (code == 0 || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) ? 0xFFFD : (Py_UCS4)code;
            i = j;
        }
        else if (d == '\r' && i + 2 < end && CH(t, i + 2) == '\n') {
            i += 3; /* a line continuation */
        }
        else if (css_newline(d)) {
            i += 2;
        }
        else {
            buffer[w++] = (d == 0 || (d >= 0xD800 && d <= 0xDFFF)) ? 0xFFFD : d;
            i += 2;
        }
    }
    PyObject *value = PyUnicode_FromKindAndData(PyUnicode_4BYTE_KIND, buffer, w);
    PyMem_Free(buffer);
    return value;
}

static int
css_record(Css *s, Py_ssize_t start, Py_ssize_t end, PyObject *value, PyObject *quote, PyObject *context)
{
    if (value == NULL)
        return -1;
    PyObject *record = Py_BuildValue("(nnNOO)", start, end, value, quote, context);
    if (record == NULL)
        return -1;
    int done = PyList_Append(s->out, record);
    Py_DECREF(record);
    return done;
}

static int
css_push(Css *s, Py_UCS4 closer, int image_set)
{
    if (s->depth == s->size) {
        Py_ssize_t size = s->size ? 2 * s->size : 16;
        Frame *grown = PyMem_Resize(s->stack, Frame, size);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        s->stack = grown;
        s->size = size;
    }
    s->stack[s->depth].closer = closer;
    s->stack[s->depth].image_set = image_set;
    s->depth++;
    return 0;
}

static Py_ssize_t
skip_space_and_comments(const Text *t, Py_ssize_t i)
{
    for (;;) {
        i = skip_space(t, i);
        if (!(i + 1 < t->n && CH(t, i) == '/' && CH(t, i + 1) == '*'))
            return i;
        Py_ssize_t end = find_pair_released(t, i + 2, '*', '/');
        if (end < 0)
            return t->n;
        i = end + 2;
    }
}

/* §4.3.5: the string token whose quote is at q; recorded when context is not NULL.
 * Returns where the next token starts, or -1 on an error. */
static Py_ssize_t
css_string(Css *s, Py_ssize_t q, PyObject *context)
{
    const Text *t = &s->t;
    Py_ssize_t n = t->n;
    Py_UCS4 quote = CH(t, q);
    Py_ssize_t e = q + 1;
    while (e < n) {
        Py_UCS4 c = CH(t, e);
        if (c == quote || css_newline(c))
            break;
        if (c == '\\') {
            if (e + 1 >= n)
                e += 1;
            else if (is_hex(CH(t, e + 1)))
                e = past_hex_escape(t, e + 1);
            else if (CH(t, e + 1) == '\r' && e + 2 < n && CH(t, e + 2) == '\n')
                e += 3;
            else
                e += 2;
            continue;
        }
        e++;
    }
    Py_ssize_t end, after;
    if (e >= n)
        end = after = n;
    else if (CH(t, e) == quote) {
        end = e;
        after = e + 1;
    }
    else
        return e; /* a bad-string */
    if (context != NULL &&
        css_record(s, q + 1, end, css_decode(t, q + 1, end, 0), quote == '"' ? s_double : s_single, context) < 0)
        return -1;
    return after;
}

enum { FUNCTION_URL, FUNCTION_SRC, FUNCTION_IMAGE_SET };

/* Past §4.3.6's url token body that starts at i: url code points and valid escapes. */
static Py_ssize_t
url_body_end(const Text *t, Py_ssize_t i)
{
    Py_ssize_t n = t->n;
    while (i < n) {
        Py_UCS4 c = CH(t, i);
        if (c == '\\') {
            if (i + 1 >= n)
                return n; /* "\" at the end: a valid escape */
            Py_UCS4 d = CH(t, i + 1);
            if (is_hex(d))
                i = past_hex_escape(t, i + 1);
            else if (css_newline(d))
                return i;
            else
                i += 2;
            continue;
        }
        if (c == '"' || c == '\'' || c == '(' || c == ')' || css_space(c) || (c >= 0x01 && c <= 0x08) ||
            c == 0x0b || (c >= 0x0e && c <= 0x1f) || c == 0x7f)
            return i;
        i++;
    }
    return i;
}

/* §4.3.14: past the remnants of a bad url (up to ")" or the end; escapes consumed whole). */
static Py_ssize_t
bad_url_end(const Text *t, Py_ssize_t i)
{
    Py_ssize_t n = t->n;
    while (i < n) {
        Py_UCS4 c = CH(t, i);
        if (c == ')')
            return i;
        i += c == '\\' ? 2 : 1;
    }
    return n;
}

/* After "name(" whose "(" ends just before j. Returns where scanning resumes, or -1. */
static Py_ssize_t
css_function(Css *s, int function, Py_ssize_t j)
{
    const Text *t = &s->t;
    Py_ssize_t n = t->n;
    if (function == FUNCTION_URL) {
        Py_ssize_t i = skip_space(t, j);
        if (i < n && (CH(t, i) == '"' || CH(t, i) == '\'')) {
            if (s->depth && css_push(s, ')', 0) < 0)
                return -1;
            return css_string(s, i, s_url);
        }
        Py_ssize_t body_end = url_body_end(t, i);
        Py_ssize_t after = skip_space(t, body_end);
        if (after >= n || CH(t, after) == ')') {
            if (body_end - 2 > i && CH(t, body_end - 2) == '\r' && CH(t, body_end - 1) == '\n')
                body_end -= 2;
            else if (body_end - 1 > i && css_space(CH(t, body_end - 1)) && CH(t, body_end - 2) != '\\')
                body_end -= 1;
            if (css_record(s, i, body_end, css_decode(t, i, body_end, 0xFFFD), s_empty, s_url) < 0)
                return -1;
            return after + 1 < n ? after + 1 : n;
        }
        Py_ssize_t remnants = bad_url_end(t, i);
        return remnants + 1 < n ? remnants + 1 : n;
    }
    if (function == FUNCTION_SRC) {
        if (s->depth && css_push(s, ')', 0) < 0)
            return -1;
        Py_ssize_t i = skip_space_and_comments(t, j);
        if (i < n && (CH(t, i) == '"' || CH(t, i) == '\''))
            return css_string(s, i, s_url);
        return i;
    }
    if (css_push(s, ')', 1) < 0)
        return -1;
    return j;
}

/* After the at-keyword @import ending at j: a string there is the URL. */
static Py_ssize_t
css_import(Css *s, Py_ssize_t j)
{
    Py_ssize_t i = skip_space_and_comments(&s->t, j);
    if (i < s->t.n && (CH(&s->t, i) == '"' || CH(&s->t, i) == '\''))
        return css_string(s, i, s_import);
    return i;
}

/* Past the name (name code points and valid escapes) that starts at p. */
static Py_ssize_t
name_end_from(const Text *t, Py_ssize_t p)
{
    Py_ssize_t n = t->n;
    while (p < n) {
        Py_UCS4 c = CH(t, p);
        if (c == '\\') {
            if (p + 1 >= n)
                return n;
            Py_UCS4 d = CH(t, p + 1);
            if (is_hex(d))
                p = past_hex_escape(t, p + 1);
            else if (css_newline(d))
                return p;
            else
                p += 2;
            continue;
        }
        if (!is_name(c))
            return p;
        p++;
    }
    return p;
}

/* A "\" at p outside strings, comments and url tokens; returns where scanning resumes. */
static Py_ssize_t
css_backslash(Css *s, Py_ssize_t p, Py_ssize_t boundary)
{
    const Text *t = &s->t;
    Py_ssize_t n = t->n;
    if (p + 1 < n && css_newline(CH(t, p + 1)))
        return p + 1;
    Py_ssize_t name_end = name_end_from(t, p);
    Py_ssize_t bound;
    int function_like = name_end < n && CH(t, name_end) == '(';
    if (function_like)
        bound = boundary;
    else {
        Py_ssize_t from = p - 8 > boundary ? p - 8 : boundary, at = -1;
        for (Py_ssize_t i = p - 1; i >= from; i--) {
            if (CH(t, i) == '@') {
                at = i;
                break;
            }
        }
        if (at < 0)
            return name_end;
        bound = at;
    }
    Py_ssize_t r = p;
    while (r > bound && is_name(CH(t, r - 1)))
        r--;
    if (r + 1 < n && CH(t, r) == '-' && CH(t, r + 1) == '-' && r - 2 >= boundary && CH(t, r - 2) == '<' &&
        CH(t, r - 1) == '!')
        r += 2;
    Py_UCS4 before = r > boundary ? CH(t, r - 1) : 0;
    int has_before = r > boundary;
    if (has_before && before == '#')
        return name_end;
    /* The name: css[r:p] as it is, then css[p:name_end] decoded; its ASCII lowercase when
     * it is all ASCII, compared with the few names that matter (none longer than 17). */
    char key[18];
    Py_ssize_t length = 0;
    int ascii = 1;
    for (Py_ssize_t i = r; i < p && ascii; i++) {
        Py_UCS4 c = CH(t, i);
        if (c >= 0x80 || c == 0 || length >= 17)
            ascii = 0;
        else
            key[length++] = (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
    }
    if (ascii) {
        PyObject *decoded = css_decode(t, p, name_end, 0xFFFD);
        if (decoded == NULL)
            return -1;
        Py_ssize_t count = PyUnicode_GET_LENGTH(decoded);
        for (Py_ssize_t i = 0; i < count && ascii; i++) {
            Py_UCS4 c = PyUnicode_READ_CHAR(decoded, i);
            if (c >= 0x80 || length >= 17)
                ascii = 0;
            else
                key[length++] = (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
        }
        Py_DECREF(decoded);
    }
    key[ascii ? length : 0] = '\0';
    if (has_before && before == '@')
        return strcmp(key, "import") == 0 ? css_import(s, name_end) : name_end;
    if (name_end < n && CH(t, name_end) == '(') {
        if (strcmp(key, "url") == 0)
            return css_function(s, FUNCTION_URL, name_end + 1);
        if (strcmp(key, "src") == 0)
            return css_function(s, FUNCTION_SRC, name_end + 1);
        if (strcmp(key, "image-set") == 0 || strcmp(key, "-webkit-image-set") == 0)
            return css_function(s, FUNCTION_IMAGE_SET, name_end + 1);
    }
    return name_end;
}

/* The characters the scanner looks at (see _SCAN and _SCAN_NESTED in rewriter/css.py):
 * [0] outside image-set(), [1] inside it, where brackets count too. */
static unsigned char css_stops[2][128];

static void
css_stops_init(void)
{
    const char *plain = "\"'\\/@(", *nested = ")[]{}";
    for (const char *c = plain; *c; c++)
        css_stops[0][(unsigned char)*c] = css_stops[1][(unsigned char)*c] = 1;
    for (const char *c = nested; *c; c++)
        css_stops[1][(unsigned char)*c] = 1;
}

/* Whether the scanner stops at c, one of css_stops, at k. */
static inline int
css_stop_here(const Text *t, Py_ssize_t k, Py_UCS4 c, int nested)
{
    if (nested)
        return 1;
    switch (c) {
    case '/': /* a comment */
        return k + 1 < t->n && CH(t, k + 1) == '*';
    case '@': /* @import, perhaps escaped */
        if (k + 1 < t->n) {
            Py_UCS4 d = CH(t, k + 1);
            return d == 'i' || d == 'I' || d == '\\';
        }
        return 0;
    case '(': /* after "url", "src" or "set" (ASCII letters: str.lower() agrees here) */
        return css_lowered_is(t, k - 3, "url") || css_lowered_is(t, k - 3, "src") || css_lowered_is(t, k - 3, "set");
    default:
        return 1;
    }
}

#define CSS_SCAN(TYPE)                                                                                                 \
    {                                                                                                                  \
        const TYPE *d = (const TYPE *)t->data;                                                                         \
        for (Py_ssize_t k = pos; k < end; k++) {                                                                       \
            TYPE c = d[k];                                                                                             \
            if (c < 128 && stops[c] && css_stop_here(t, k, c, nested))                                                 \
                return k;                                                                                              \
        }                                                                                                              \
        return -1;                                                                                                     \
    }

/* The next character the scanner stops at in [pos, end), or -1 (what follows a character
 * is read up to the text's end). Plain C: it runs without the GIL. */
static Py_ssize_t
css_scan_to(const Text *t, Py_ssize_t pos, Py_ssize_t end, int nested)
{
    const unsigned char *stops = css_stops[nested ? 1 : 0];
    switch (t->kind) {
    case PyUnicode_1BYTE_KIND:
        CSS_SCAN(Py_UCS1)
    case PyUnicode_2BYTE_KIND:
        CSS_SCAN(Py_UCS2)
    default:
        CSS_SCAN(Py_UCS4)
    }
}

/* The next character the scanner stops at from pos, or -1: past the first RELEASE_AT bytes,
 * without the GIL. */
static Py_ssize_t
css_scan(const Text *t, Py_ssize_t pos, int nested)
{
    Py_ssize_t window = RELEASE_AT / t->kind;
    if (pos >= t->n || t->n - pos <= 2 * window)
        return css_scan_to(t, pos, t->n, nested);
    Py_ssize_t k = css_scan_to(t, pos, pos + window, nested);
    if (k >= 0)
        return k;
    Py_BEGIN_ALLOW_THREADS
    k = css_scan_to(t, pos + window, t->n, nested);
    Py_END_ALLOW_THREADS
    return k;
}

PyDoc_STRVAR(scan_css_doc,
             "scan_css(css) -> list\n\nEvery URL of a piece of CSS: (start, end, value, quote, context).");

static PyObject *
scan_css(PyObject *module, PyObject *text)
{
    Css s;
    if (text_init(&s.t, text) < 0)
        return NULL;
    s.out = PyList_New(0);
    if (s.out == NULL)
        return NULL;
    s.stack = NULL;
    s.depth = s.size = 0;
    const Text *t = &s.t;
    Py_ssize_t n = t->n, pos = 0, boundary = 0;
    while (pos < n) {
        Py_ssize_t k = css_scan(t, pos, s.depth > 0);
        if (k < 0)
            break;
        Py_UCS4 c = CH(t, k);
        if (c == '(') {
            int function = -1;
            Py_ssize_t name_length = 0;
            if (css_lowered_is(t, k - 3, "url")) {
                function = FUNCTION_URL;
                name_length = 3;
            }
            else if (css_lowered_is(t, k - 3, "src")) {
                function = FUNCTION_SRC;
                name_length = 3;
            }
            else if (css_lowered_is(t, k - 3, "set") && css_lowered_is(t, k - 9, "image-set")) {
                function = FUNCTION_IMAGE_SET;
                name_length = css_lowered_is(t, k - 17, "-webkit-image-set") ? 17 : 9;
            }
            Py_ssize_t start = k - name_length;
            int has_before = start > boundary;
            Py_UCS4 before = has_before ? CH(t, start - 1) : 0;
            int cdo = start - 4 >= boundary && CH(t, start - 4) == '<' && CH(t, start - 3) == '!' &&
                      CH(t, start - 2) == '-' && CH(t, start - 1) == '-';
            if (function >= 0 && start >= pos &&
                !(has_before && (is_name(before) || before == '@' || before == '#') && !cdo)) {
                pos = boundary = css_function(&s, function, k + 1);
                if (pos < 0)
                    goto error;
            }
            else if (s.depth) {
                if (css_push(&s, ')', 0) < 0)
                    goto error;
                pos = boundary = k + 1;
            }
            else
                pos = k + 1;
        }
        else if (c == '/') {
            if (k + 1 < n && CH(t, k + 1) == '*') {
                Py_ssize_t end = find_pair_released(t, k + 2, '*', '/');
                if (end < 0)
                    break;
                pos = boundary = end + 2;
            }
            else
                pos = k + 1;
        }
        else if (c == '"' || c == '\'') {
            PyObject *context = s.depth && s.stack[s.depth - 1].image_set ? s_image_set : NULL;
            pos = boundary = css_string(&s, k, context);
            if (pos < 0)
                goto error;
        }
        else if (c == '\\') {
            pos = boundary = css_backslash(&s, k, boundary);
            if (pos < 0)
                goto error;
        }
        else if (c == '@') {
            Py_ssize_t after = k + 7;
            if (!css_lowered_is(t, k + 1, "import"))
                pos = k + 1;
            else if (after < n && (is_name(CH(t, after)) ||
                                   (CH(t, after) == '\\' && !(after + 1 < n && css_newline(CH(t, after + 1))))))
                pos = k + 1;
            else {
                pos = boundary = css_import(&s, after);
                if (pos < 0)
                    goto error;
            }
        }
        else if (c == '[' || c == '{') {
            if (css_push(&s, c == '[' ? ']' : '}', 0) < 0)
                goto error;
            pos = boundary = k + 1;
        }
        else { /* ")", "]" or "}" inside image-set() */
            if (s.stack[s.depth - 1].closer == c)
                s.depth--;
            pos = boundary = k + 1;
        }
    }
    PyMem_Free(s.stack);
    return s.out;
error:
    PyMem_Free(s.stack);
    Py_DECREF(s.out);
    return NULL;
}

/* ------------------------------------------------------------------------ */
/* conditional_head: where a conditional comment may start                   */
/* ------------------------------------------------------------------------ */

PyDoc_STRVAR(conditional_head_doc, "conditional_head(text, start) -> int\n\n"
                                   "text.find('<!--[', start): memchr for the '[', then the four before it.");

static PyObject *
conditional_head(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    Text t;
    Py_ssize_t start;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "conditional_head takes text and start");
        return NULL;
    }
    if (text_init(&t, args[0]) < 0 || find_start(args[1], t.n, &start) < 0)
        return NULL;
    Py_ssize_t n = t.n;
    if (start > n - 5) /* no room for "<!--[" (and start + 4 cannot overflow below) */
        return PyLong_FromLong(-1);
    Py_ssize_t k = start + 4; /* where the '[' of a head at start would be */
    while (k < n) {
        k = find_char_released(&t, k, '[');
        if (k < 0)
            break;
        if (CH(&t, k - 1) == '-' && CH(&t, k - 2) == '-' && CH(&t, k - 3) == '!' && CH(&t, k - 4) == '<')
            return PyLong_FromSsize_t(k - 4);
        k++;
    }
    return PyLong_FromLong(-1);
}

/* ------------------------------------------------------------------------ */
/* A reference's classification without a base                               */
/* ------------------------------------------------------------------------ */

PyDoc_STRVAR(classified_quickly_doc,
             "classified_quickly(same_document, absolute, rfc1808, shared, classify, classify_shared, reference) -> tuple\n\n"
             "classify(reference), but same_document for '' or '#...', absolute for 'scheme:...', and "
             "shared's answer for the reference's shared key, made by classify_shared and kept there on a miss, given the "
             "reference's fragment where the key went without it (see rewriter.document.process).");

static inline int
is_ascii_alpha(Py_UCS4 c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* The most answers a shared dict holds (rewriter.document.process.SharedClassifications.MOST). */
#define SHARED_MOST 4096

/* rewriter.document.process.shared_key: the length of what of the reference the documents of
   one folder share (the reference, or it without a plain fragment), or -1 (see its docstring). */
static Py_ssize_t
shared_key(const Text *t)
{
    if (t->n == 0)
        return -1;
    Py_UCS4 first = CH(t, 0);
    if (first <= ' ' || first == '#' || first == '?' || first == ';')
        return -1;
    if (first == '/' && t->n >= 2 && CH(t, 1) == '/' && (t->n == 2 || CH(t, 2) == '?' || CH(t, 2) == '#'))
        return -1;
    Py_ssize_t cut = t->n;
    int in_first_segment = 1;
    for (Py_ssize_t i = 0; i < t->n; i++) {
        Py_UCS4 c = CH(t, i);
        if (c == '#') {
            cut = i;
            break;
        }
        if (c == '\\' || c == '%')
            return -1;
        if (c == '/' || c == '?')
            in_first_segment = 0;
        else if (c == ':' && in_first_segment)
            return -1;
        else if (c == '_' && i + 6 <= t->n && CH(t, i + 1) == 'f' && CH(t, i + 2) == 'i' && CH(t, i + 3) == 'l' &&
                 CH(t, i + 4) == 'e' && CH(t, i + 5) == 's')
            return -1;
    }
    if (cut == t->n || CH(t, cut - 1) <= ' ') /* the URL Standard would strip that from the key alone */
        return t->n;
    /* A plain fragment: printable ASCII but space, '"', '<', '>' and '`'; else the whole reference. */
    for (Py_ssize_t i = cut + 1; i < t->n; i++) {
        Py_UCS4 c = CH(t, i);
        if (c <= ' ' || c > '~' || c == '"' || c == '<' || c == '>' || c == '`')
            return t->n;
    }
    return cut;
}

static PyObject *
classified_quickly(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "classified_quickly takes 7 arguments");
        return NULL;
    }
    PyObject *same_document = args[0], *absolute = args[1], *shared = args[3], *reference = args[6];
    if (shared != Py_None && !PyDict_CheckExact(shared)) {
        PyErr_SetString(PyExc_TypeError, "classified_quickly: shared is a dict or None");
        return NULL;
    }
    Text t;
    if (text_init(&t, reference) < 0)
        return NULL;
    if (same_document != Py_None && (t.n == 0 || CH(&t, 0) == '#'))
        return Py_NewRef(same_document);
    /* rfc1808's truth is asked where the twin asks it: only with absolute. */
    int rfc1808 = absolute == Py_None ? 0 : PyObject_IsTrue(args[2]);
    if (rfc1808 < 0)
        return NULL;
    if (absolute != Py_None && t.n > 0) {
        /* RFC 3986 §3.1: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"; RFC 1808 lets any of them start it. */
        Py_ssize_t i = 0;
        for (; i < t.n; i++) {
            Py_UCS4 c = CH(&t, i);
            int letter = is_ascii_alpha(c), other = (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
            if (!letter && !(other && (i > 0 || rfc1808)))
                break;
        }
        if (i > 0 && i < t.n && CH(&t, i) == ':')
            return Py_NewRef(absolute);
    }
    Py_ssize_t cut = shared == Py_None ? -1 : shared_key(&t);
    if (cut >= 0) {
        PyObject *key = cut == t.n ? Py_NewRef(reference) : PyUnicode_Substring(reference, 0, cut);
        if (key == NULL)
            return NULL;
        PyObject *known = PyDict_GetItemWithError(shared, key); /* borrowed */
        if (known != NULL)
            Py_INCREF(known);
        else if (!PyErr_Occurred()) {
            known = PyObject_CallOneArg(args[5], key);
            /* Bounded, one page of a million links included: emptied when full (SharedClassifications.MOST). */
            if (known != NULL && PyDict_GET_SIZE(shared) >= SHARED_MOST)
                PyDict_Clear(shared);
            if (known != NULL && PyDict_SetItem(shared, key, known) < 0)
                Py_CLEAR(known);
        }
        Py_DECREF(key);
        if (known == NULL || cut == t.n)
            return known;
        /* with_fragment: the resolved URL, when a str, followed by the fragment. */
        if (!PyTuple_CheckExact(known) || PyTuple_GET_SIZE(known) != 3 || !PyUnicode_CheckExact(PyTuple_GET_ITEM(known, 1)))
            return known;
        PyObject *fragment = PyUnicode_Substring(reference, cut, t.n);
        PyObject *resolved = fragment == NULL ? NULL : PyUnicode_Concat(PyTuple_GET_ITEM(known, 1), fragment);
        Py_XDECREF(fragment);
        PyObject *made = resolved == NULL ? NULL
                                          : PyTuple_Pack(3, PyTuple_GET_ITEM(known, 0), resolved, PyTuple_GET_ITEM(known, 2));
        Py_XDECREF(resolved);
        Py_DECREF(known);
        return made;
    }
    return PyObject_CallOneArg(args[4], reference);
}

/* ------------------------------------------------------------------------ */
/* The parser's text on one line                                             */
/* ------------------------------------------------------------------------ */

PyDoc_STRVAR(flattened_doc, "flattened(text) -> str\n\n"
                            "text with each LF and CR a space: a copy made in one pass, or text itself.");

static PyObject *
flattened(PyObject *module, PyObject *text)
{
    Text t;
    if (text_init(&t, text) < 0)
        return NULL;
    Py_ssize_t lf = find_char_released(&t, 0, '\n'), cr = find_char_released(&t, 0, '\r');
    if (lf < 0 && cr < 0)
        return PyUnicode_Substring(text, 0, t.n); /* text itself, as an exact str */
    /* The same characters but ASCII ones, so the same widest one: the copy is of text's kind. */
    PyObject *out = PyUnicode_New(t.n, PyUnicode_MAX_CHAR_VALUE(text));
    if (out == NULL)
        return NULL;
    /* The copy is ours alone until it is returned: a long one is made without the GIL. */
    void *data = PyUnicode_DATA(out);
    PyThreadState *state = (size_t)t.n * (size_t)t.kind > RELEASE_AT ? PyEval_SaveThread() : NULL;
    memcpy(data, t.data, (size_t)t.n * (size_t)t.kind);
    /* Each one found as str.find finds it (memchr), in the copy: lines run to tens of characters. */
    Text copy = {t.kind, data, t.n, out};
    for (Py_ssize_t at = lf; at >= 0; at = find_char(&copy, at + 1, '\n'))
        PyUnicode_WRITE(t.kind, data, at, ' ');
    for (Py_ssize_t at = cr; at >= 0; at = find_char(&copy, at + 1, '\r'))
        PyUnicode_WRITE(t.kind, data, at, ' ');
    if (state != NULL)
        PyEval_RestoreThread(state);
    return out;
}

/* ------------------------------------------------------------------------ */
/* The last <frameset start tag                                              */
/* ------------------------------------------------------------------------ */

PyDoc_STRVAR(last_frameset_tag_doc, "last_frameset_tag(text) -> int\n\n"
                                    "Where the last '<frameset' whose name ends as a tag name does begins, or -1: "
                                    "memchr from one '<' to the next (see rewriter.html.parsed.last_frameset_tag).");

static PyObject *
last_frameset_tag(PyObject *module, PyObject *text)
{
    static const char name[] = "frameset";
    Text t;
    if (text_init(&t, text) < 0)
        return NULL;
    Py_ssize_t last = -1;
    /* Read only, and the caller holds the text: a long one is scanned without the GIL. */
    PyThreadState *state = (size_t)t.n * (size_t)t.kind > RELEASE_AT ? PyEval_SaveThread() : NULL;
    for (Py_ssize_t k = find_char(&t, 0, '<'); k >= 0 && k + 9 < t.n; k = find_char(&t, k + 1, '<')) {
        int i = 0;
        /* ASCII case folded by one bit: only 'F' and 'f' (and so on) become the letter. */
        while (i < 8 && (CH(&t, k + 1 + i) | 0x20) == (Py_UCS4)name[i])
            i++;
        Py_UCS4 after = CH(&t, k + 9);
        if (i == 8 && (after == '\t' || after == '\n' || after == '\f' || after == '\r' || after == ' ' ||
                       after == '/' || after == '>'))
            last = k;
    }
    if (state != NULL)
        PyEval_RestoreThread(state);
    return PyLong_FromSsize_t(last);
}

/* ------------------------------------------------------------------------ */
/* A quoted-printable body decoded                                           */
/* ------------------------------------------------------------------------ */

static int
hex_digit(unsigned char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c |= 0x20; /* either case: RFC 2045 6.7 note on robust readers */
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Each line of in[0:n] as rewriter.mime.transfer.decode_qp reads it, written to out (at most
 * n bytes): its line break (CR LF, or LF) taken off, then its trailing spaces and tabs (RFC
 * 2045 6.7 rule 3); a final "=" is a soft break (rule 5), which joins it to the next line;
 * "=" and two hex digits within what is left are one byte (rule 1), any other "=" stays
 * (note 2). The last line (after the last LF) keeps any CR it ends with and has no break. */
static Py_ssize_t
qp_decode_into(const unsigned char *in, Py_ssize_t n, unsigned char *out)
{
    Py_ssize_t w = 0, i = 0;
    for (;;) {
        const unsigned char *lf = memchr(in + i, '\n', (size_t)(n - i));
        Py_ssize_t end = lf != NULL ? lf - in : n, stop = end;
        int brk = 0; /* bytes of the line break: 2 CR LF, 1 LF, 0 the last line */
        if (lf != NULL) {
            brk = stop > i && in[stop - 1] == '\r' ? 2 : 1;
            stop -= brk - 1;
        }
        while (stop > i && (in[stop - 1] == ' ' || in[stop - 1] == '\t'))
            stop--;
        int soft = stop > i && in[stop - 1] == '=';
        stop -= soft;
        for (Py_ssize_t k = i; k < stop;) {
            const unsigned char *equals = memchr(in + k, '=', (size_t)(stop - k));
            Py_ssize_t run = (equals != NULL ? equals - in : stop) - k;
            memcpy(out + w, in + k, (size_t)run);
            w += run;
            k += run;
            if (k >= stop)
                break;
            int high = k + 2 < stop ? hex_digit(in[k + 1]) : -1, low = high >= 0 ? hex_digit(in[k + 2]) : -1;
            if (low >= 0) {
                out[w++] = (unsigned char)(high * 16 + low);
                k += 3;
            }
            else {
                out[w++] = '=';
                k++;
            }
        }
        if (!soft && brk == 2)
            out[w++] = '\r';
        if (!soft && brk)
            out[w++] = '\n';
        if (lf == NULL)
            return w;
        i = end + 1;
    }
}

PyDoc_STRVAR(decode_qp_doc, "decode_qp(body) -> bytes\n\n"
                            "A quoted-printable body decoded line by line, as RFC 2045 6.7 reads it "
                            "(see rewriter.mime.transfer.decode_qp).");

static PyObject *
decode_qp(PyObject *module, PyObject *body)
{
    if (!PyBytes_Check(body)) {
        PyErr_Format(PyExc_TypeError, "decode_qp: body is bytes, not %.200s", Py_TYPE(body)->tp_name);
        return NULL;
    }
    Py_ssize_t n = PyBytes_GET_SIZE(body);
    PyObject *out = PyBytes_FromStringAndSize(NULL, n); /* decoding never lengthens */
    if (out == NULL)
        return NULL;
    /* bytes do not change, and the copy is ours alone: a long body is read without the GIL. */
    PyThreadState *state = n > RELEASE_AT ? PyEval_SaveThread() : NULL;
    Py_ssize_t written = qp_decode_into((const unsigned char *)PyBytes_AS_STRING(body), n,
                                        (unsigned char *)PyBytes_AS_STRING(out));
    if (state != NULL)
        PyEval_RestoreThread(state);
    if (written < n && _PyBytes_Resize(&out, written) < 0)
        return NULL;
    return out;
}

/* ------------------------------------------------------------------------ */
/* The module                                                                */
/* ------------------------------------------------------------------------ */

static PyMethodDef methods[] = {
    {"tag_attributes", (PyCFunction)(void (*)(void))tag_attributes, METH_FASTCALL, tag_attributes_doc},
    {"tag_end", (PyCFunction)(void (*)(void))tag_end, METH_FASTCALL, tag_end_doc},
    {"plain_links", (PyCFunction)plain_links, METH_O, plain_links_doc},
    {"named_start_tags", (PyCFunction)(void (*)(void))named_start_tags, METH_FASTCALL, named_start_tags_doc},
    {"end_tag", (PyCFunction)(void (*)(void))end_tag, METH_FASTCALL, end_tag_doc},
    {"utf8_offsets", (PyCFunction)(void (*)(void))utf8_offsets, METH_FASTCALL, utf8_offsets_doc},
    {"utf8_splice", (PyCFunction)(void (*)(void))utf8_splice, METH_FASTCALL, utf8_splice_doc},
    {"scan_css", (PyCFunction)scan_css, METH_O, scan_css_doc},
    {"conditional_head", (PyCFunction)(void (*)(void))conditional_head, METH_FASTCALL, conditional_head_doc},
    {"flattened", (PyCFunction)flattened, METH_O, flattened_doc},
    {"last_frameset_tag", (PyCFunction)last_frameset_tag, METH_O, last_frameset_tag_doc},
    {"decode_qp", (PyCFunction)decode_qp, METH_O, decode_qp_doc},
    {"classified_quickly", (PyCFunction)(void (*)(void))classified_quickly, METH_FASTCALL, classified_quickly_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "rewriter.document._speedups", "Inner loops in C (see rewriter.document.speedups).", -1,
    methods,
};

static PyObject *
interned(const char *chars)
{
    return PyUnicode_InternFromString(chars);
}

PyMODINIT_FUNC
PyInit__speedups(void)
{
    s_double = interned("\"");
    s_single = interned("'");
    s_empty = interned("");
    s_equals = interned("=");
    s_url = interned("url");
    s_import = interned("import");
    s_image_set = interned("image-set");
    s_lower = interned("lower");
    s_new = interned("__new__");
    s_one = PyLong_FromLong(1);
    s_position = interned("position");
    s_source_col = interned("source_col");
    s_img = interned("img");
    s_srcset = interned("srcset");
    s_tag = interned("tag");
    s_namespace = interned("namespace");
    s_rewritten = interned("rewritten");
    s_relinked = interned("relinked");
    s_amp = interned("&amp;");
    s_ampersand = interned("&");
    s_quot = interned("\"");
    s_apos = interned("'");
    s_escaped_quot = interned("&quot;");
    s_escaped_apos = interned("&#39;");
    s_escaped_amp = interned("&amp;");
    css_stops_init();
    s_fields = interned("_fields");
    if (s_fields == NULL)
        return NULL;
    for (int i = 0; i < SEARCH_FIELD_COUNT; i++)
        if ((search_names[i] = interned(SEARCH_FIELDS[i])) == NULL)
            return NULL;
    for (int i = 0; i < LINK_FIELD_COUNT; i++)
        if ((link_names[i] = interned(LINK_FIELDS[i])) == NULL)
            return NULL;
    if (!s_double || !s_single || !s_empty || !s_equals || !s_url || !s_import || !s_image_set || !s_lower || !s_new || !s_one ||
        !s_position || !s_source_col || !s_img || !s_srcset || !s_tag || !s_namespace || !s_rewritten || !s_relinked || !s_amp || !s_ampersand || !s_quot ||
        !s_apos || !s_escaped_quot || !s_escaped_apos || !s_escaped_amp)
        return NULL;
    PyObject *module = PyModule_Create(&module_definition);
    /* Which source this was built from (setup.py's digest of this file): rewriter.document.speedups
       leaves a build of another source unused, rather than call it with another interface. */
    if (module != NULL && PyModule_AddStringConstant(module, "SOURCE", REWRITER_SOURCE) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
