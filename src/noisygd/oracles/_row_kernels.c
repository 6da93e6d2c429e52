/*
 * The row scan of noisygd.oracles.rows (scan_rows) for C-contiguous float64 dense rows:
 * per row block j (rows starts[j] .. starts[j+1]) and row i of it, in one read of the row,
 *
 *     D_i  = (x_i - c) * f                          (c, f optional: 0 and 1 without them)
 *     sq_i = sum_k D_ik^2                           (four partial sums over k mod 4, added
 *                                                    as (s0 + s1) + (s2 + s3))
 *
 * and, with the bound B (B > 0) and the sums asked for, while the row is in cache,
 *
 *     s_i = min(1, B / sqrt(sq_i)),  rows[j] += s_i D_i,  absr[j] += s_i |D_i|
 *
 * (the scale factor of the projection onto the ball, then the block's sums of the served
 * rows and of their absolute values, each in row order: a block's result does not depend on
 * how blocks are shared among threads). With nnz, also the block's number of nonzero x_ik.
 * A row whose sq_i leaves [1e-290, 1e290] (or is not finite) adds nothing to the sums and
 * sets special[j]: the caller recomputes that block's norms and sums (rows.py, module doc).
 * The GIL is released for the whole call.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SQ_HI 1e290
#define SQ_LO 1e-290

static int optional_buffer(PyObject *obj, Py_buffer *view)
{
    if (obj == Py_None) {
        view->obj = NULL;
        return 1;
    }
    return PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) == 0
               ? 1
               : (PyErr_Clear(),
                  PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) == 0);
}

static void release(Py_buffer *view)
{
    if (view->obj)
        PyBuffer_Release(view);
}

static int need(const Py_buffer *view, Py_ssize_t bytes, const char *name)
{
    if (view->len < bytes) {
        PyErr_Format(PyExc_ValueError, "%s is too small", name);
        return 0;
    }
    return 1;
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CLONES
#endif

/* the nonzeros of a row (a loop of its own: vectorised) */
CLONES static int64_t nonzeros(const double *restrict x, Py_ssize_t d)
{
    int64_t count = 0;
    for (Py_ssize_t k = 0; k < d; k++)
        count += x[k] != 0.0 ? 1 : 0;
    return count;
}

CLONES static void scan_block(const double *restrict X, Py_ssize_t d, int64_t a, int64_t b,
                              const double *restrict c, const double *restrict f,
                              double bound, double *restrict sq, double *restrict rows,
                              double *restrict absr, int64_t *nnz, uint8_t *special,
                              double *restrict D)
{
    int64_t count = 0;
    int flagged = 0;
    if (rows)
        memset(rows, 0, (size_t)d * sizeof(double));
    if (absr)
        memset(absr, 0, (size_t)d * sizeof(double));
    for (int64_t i = a; i < b; i++) {
        const double *x = X + i * d;
        if (nnz)
            count += nonzeros(x, d);
        if (c && f)
            for (Py_ssize_t k = 0; k < d; k++)
                D[k] = (x[k] - c[k]) * f[k];
        else if (c)
            for (Py_ssize_t k = 0; k < d; k++)
                D[k] = x[k] - c[k];
        else if (f)
            for (Py_ssize_t k = 0; k < d; k++)
                D[k] = x[k] * f[k];
        const double *r = (c || f) ? D : x;
        double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
        Py_ssize_t k = 0;
        for (; k + 4 <= d; k += 4) {
            s0 += r[k] * r[k];
            s1 += r[k + 1] * r[k + 1];
            s2 += r[k + 2] * r[k + 2];
            s3 += r[k + 3] * r[k + 3];
        }
        for (; k < d; k++)
            s0 += r[k] * r[k];
        const double q = (s0 + s1) + (s2 + s3);
        sq[i] = q;
        if (!(q <= SQ_HI) || (q < SQ_LO && q != 0.0)) {
            flagged = 1; /* the caller recomputes this block (and finds any zero row exact) */
            continue;
        }
        if (!rows && !absr)
            continue;
        const double s = q > 0.0 ? fmin(1.0, bound / sqrt(q)) : 1.0;
        if (rows)
            for (Py_ssize_t t = 0; t < d; t++)
                rows[t] += s * r[t];
        if (absr)
            for (Py_ssize_t t = 0; t < d; t++)
                absr[t] += s * fabs(r[t]);
    }
    if (nnz)
        *nnz = count;
    *special = (uint8_t)flagged;
}

PyDoc_STRVAR(scan_blocks_doc,
"scan_blocks(X, c, f, bound, starts, j0, j1, sq, rows, absr, nnz, special)\n"
"\n"
"Blocks j0 .. j1 - 1 of the C-contiguous float64 rows X (n x d): writes sq[i] (squared norms\n"
"of (x_i - c) * f), and, each optional (None: not computed), rows[j] and absr[j] (d doubles:\n"
"the sums of s_i (x_i - c) f and s_i |x_i - c| f, s_i = min(1, bound / sqrt(sq_i)); need\n"
"bound > 0), nnz[j] (int64 nonzeros of x); special[j] (uint8) is 1 when a row's squared\n"
"norm leaves [1e-290, 1e290] or is not finite (its block's sums then omit it). c and f may\n"
"be None.");

static PyObject *scan_blocks(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *x_obj, *c_obj, *f_obj, *rows_obj, *absr_obj, *nnz_obj;
    double bound;
    Py_ssize_t j0, j1;
    Py_buffer X = {0}, c = {0}, f = {0}, starts = {0}, sq = {0}, rows = {0}, absr = {0};
    Py_buffer nnz = {0}, special = {0};
    PyObject *result = NULL;
    double *D = NULL;
    if (!PyArg_ParseTuple(args, "OOOdO&nnO&OOOO&", &x_obj, &c_obj, &f_obj, &bound,
                          optional_buffer, &starts, &j0, &j1, optional_buffer, &sq,
                          &rows_obj, &absr_obj, &nnz_obj, optional_buffer, &special))
        goto done;
    if (!optional_buffer(x_obj, &X) || !optional_buffer(c_obj, &c)
        || !optional_buffer(f_obj, &f) || !optional_buffer(rows_obj, &rows)
        || !optional_buffer(absr_obj, &absr) || !optional_buffer(nnz_obj, &nnz))
        goto done;
    if (!X.obj || !starts.obj || !sq.obj || !special.obj) {
        PyErr_SetString(PyExc_TypeError, "X, starts, sq and special must be arrays");
        goto done;
    }
    if (sq.readonly || special.readonly || (rows.obj && rows.readonly)
        || (absr.obj && absr.readonly) || (nnz.obj && nnz.readonly)) {
        PyErr_SetString(PyExc_ValueError, "the outputs must be writable");
        goto done;
    }
    if ((rows.obj || absr.obj) && !(bound > 0.0)) {
        PyErr_SetString(PyExc_ValueError, "the sums need a positive bound");
        goto done;
    }
    if (X.ndim != 2 || X.itemsize != 8 || !X.shape) {
        PyErr_SetString(PyExc_ValueError, "X must be a 2-D float64 array");
        goto done;
    }
    {
        const Py_ssize_t n = X.shape[0], d = X.shape[1];
        const Py_ssize_t n_blocks = starts.len / (Py_ssize_t)sizeof(int64_t) - 1;
        const int64_t *st = (const int64_t *)starts.buf;
        if (n_blocks < 0 || j0 < 0 || j1 < j0 || j1 > n_blocks) {
            PyErr_SetString(PyExc_ValueError, "bad block range");
            goto done;
        }
        for (Py_ssize_t j = j0; j < j1; j++)
            if (st[j] < 0 || st[j] > st[j + 1] || st[j + 1] > n) {
                PyErr_SetString(PyExc_ValueError, "block starts outside the rows");
                goto done;
            }
        if (!need(&sq, n * 8, "sq") || !need(&special, n_blocks, "special")
            || (c.obj && !need(&c, d * 8, "c")) || (f.obj && !need(&f, d * 8, "f"))
            || (rows.obj && !need(&rows, n_blocks * d * 8, "rows"))
            || (absr.obj && !need(&absr, n_blocks * d * 8, "absr"))
            || (nnz.obj && !need(&nnz, n_blocks * 8, "nnz")))
            goto done;
        D = (double *)malloc((size_t)(d > 0 ? d : 1) * sizeof(double));
        if (!D) {
            PyErr_NoMemory();
            goto done;
        }
        const double *cb = c.obj ? (const double *)c.buf : NULL;
        const double *fb = f.obj ? (const double *)f.buf : NULL;
        double *rb = rows.obj ? (double *)rows.buf : NULL;
        double *ab = absr.obj ? (double *)absr.buf : NULL;
        int64_t *nb = nnz.obj ? (int64_t *)nnz.buf : NULL;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t j = j0; j < j1; j++)
            scan_block((const double *)X.buf, d, st[j], st[j + 1], cb, fb, bound,
                       (double *)sq.buf, rb ? rb + j * d : NULL, ab ? ab + j * d : NULL,
                       nb ? nb + j : NULL, (uint8_t *)special.buf + j, D);
        Py_END_ALLOW_THREADS
    }
    result = Py_None;
    Py_INCREF(result);
done:
    free(D);
    release(&X);
    release(&c);
    release(&f);
    release(&starts);
    release(&sq);
    release(&rows);
    release(&absr);
    release(&nnz);
    release(&special);
    return result;
}


/*
 * The counts of noisygd.mechanisms.feature_range (magnitude_histogram): value v (column j)
 * with biased IEEE-754 exponent e (2^(e - 1023) <= |v| < 2^(e - 1022) when normal; e = 0:
 * zero or subnormal) and sign bit s adds 1 to counts[(2 j + s) K + clip(e - 1023 - kmin, 0,
 * K - 1)]; zeros (+0.0 and -0.0) add nothing. Integer operations on the bits only.
 */
static inline int count_one(double value, Py_ssize_t j, Py_ssize_t K, long kmin,
                            double *counts)
{
    uint64_t bits;
    memcpy(&bits, &value, sizeof bits);
    const long e = (long)((bits >> 52) & 0x7FF);
    if (e == 0x7FF)
        return -1; /* NaN or infinite */
    if ((bits & 0x7FFFFFFFFFFFFFFFULL) == 0)
        return 0;
    long k = e - 1023 - kmin;
    k = k < 0 ? 0 : (k > K - 1 ? K - 1 : k);
    counts[(2 * j + (Py_ssize_t)(bits >> 63)) * K + k] += 1.0;
    return 0;
}

static int count_magnitudes(const double *values, Py_ssize_t m, const void *cols, int col_bytes,
                            Py_ssize_t period, Py_ssize_t p, Py_ssize_t K, long kmin,
                            double *counts)
{
    int bad = 0;
    if (!cols) { /* dense rows of `period` columns */
        for (Py_ssize_t a = 0; a < m; a += period)
            for (Py_ssize_t j = 0; j < period; j++)
                bad |= count_one(values[a + j], j, K, kmin, counts);
        return bad;
    }
    for (Py_ssize_t t = 0; t < m; t++) {
        const Py_ssize_t j = col_bytes == 4 ? (Py_ssize_t)((const int32_t *)cols)[t]
                                            : (Py_ssize_t)((const int64_t *)cols)[t];
        if (j < 0 || j >= p)
            return -2;
        bad |= count_one(values[t], j, K, kmin, counts);
    }
    return bad;
}

PyDoc_STRVAR(magnitude_counts_doc,
"magnitude_counts(values, columns, period, K, kmin, counts)\n"
"\n"
"Adds the binary-exponent histogram of the float64 values (C-contiguous, any shape) to\n"
"counts (float64, p * 2 * K): value t of column j = columns[t] (int32 or int64, as many as\n"
"the values) or, with columns None, j = t % period (the rows of a dense matrix, period its\n"
"columns), adds 1 to counts[(2 j + sign) K + clip(k - kmin, 0, K - 1)] with\n"
"2^k <= |v| < 2^(k + 1); zeros add nothing. ValueError on NaN or infinite values (none\n"
"shown) or a column outside [0, p).");

static PyObject *magnitude_counts(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *v_obj, *c_obj, *n_obj;
    Py_ssize_t period, K;
    long kmin;
    Py_buffer v = {0}, c = {0}, n = {0};
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "OOnnlO", &v_obj, &c_obj, &period, &K, &kmin, &n_obj))
        goto done;
    if (!optional_buffer(v_obj, &v) || !optional_buffer(c_obj, &c)
        || !optional_buffer(n_obj, &n))
        goto done;
    if (!v.obj || !n.obj || v.itemsize != 8 || n.itemsize != 8 || n.readonly) {
        PyErr_SetString(PyExc_TypeError, "values and counts must be float64 arrays (counts "
                        "writable)");
        goto done;
    }
    if (K < 1 || n.len % (Py_ssize_t)(2 * K * 8) != 0) {
        PyErr_SetString(PyExc_ValueError, "counts must hold p * 2 * K values");
        goto done;
    }
    {
        const Py_ssize_t m = v.len / 8, p = n.len / (2 * K * 8);
        const int col_bytes = c.obj ? (int)c.itemsize : 0;
        if (c.obj && ((col_bytes != 4 && col_bytes != 8) || c.len / col_bytes != m)) {
            PyErr_SetString(PyExc_ValueError, "columns must be int32 or int64, one per value");
            goto done;
        }
        if (!c.obj && (period < 1 || period > p || m % period != 0)) {
            PyErr_SetString(PyExc_ValueError, "period must divide the number of values and "
                            "be at most p");
            goto done;
        }
        int status;
        Py_BEGIN_ALLOW_THREADS
        status = count_magnitudes((const double *)v.buf, m, c.obj ? c.buf : NULL, col_bytes,
                                  period, p, K, kmin, (double *)n.buf);
        Py_END_ALLOW_THREADS
        if (status == -1) {
            PyErr_SetString(PyExc_ValueError, "X holds NaN or infinite values");
            goto done;
        }
        if (status == -2) {
            PyErr_SetString(PyExc_ValueError, "a column index lies outside the counts");
            goto done;
        }
    }
    result = Py_None;
    Py_INCREF(result);
done:
    release(&v);
    release(&c);
    release(&n);
    return result;
}

/*
 * The squared norms of CSR rows a .. b - 1 about a centre, in one read of their nonzeros:
 *
 *     q_i = sum_t (x_t * x_t) * w[j_t]        (w = f * f; without w: sum_t x_t * x_t)
 *     m_i = sum_t x_t * cw[j_t]               (cw = c * f * f; only with cw)
 *
 * each summed from 0.0 in the row's stored order: the sums numpy.bincount and SciPy's
 * csr_matvec form (rows.py, _block_sq), so the caller's sq_i = max(q_i - 2 m_i + |f c|^2, 0)
 * is the same to the last bit with or without the kernel.
 */
/* first the row pointers (non-decreasing from a to b: every row lies within the span of
 * data the caller checked) and the columns against d, so that a bad index never reads
 * outside the buffers; then the sums */
#define CSR_SQ_ROWS(IDX)                                                                   \
    {                                                                                      \
        const IDX *ip = (const IDX *)indptr, *ix = (const IDX *)indices;                   \
        for (int64_t i = a; i < b; i++)                                                    \
            if (ip[i + 1] < ip[i])                                                         \
                return -3;                                                                 \
        for (int64_t t = ip[a]; t < ip[b]; t++)                                            \
            if (ix[t] < 0 || ix[t] >= d)                                                   \
                return -1;                                                                 \
        for (int64_t i = a; i < b; i++) {                                                  \
            double q = 0.0, m = 0.0;                                                       \
            for (int64_t t = ip[i]; t < ip[i + 1]; t++) {                                  \
                const double x = data[t];                                                  \
                const IDX j = ix[t];                                                       \
                q += w ? (x * x) * w[j] : x * x;                                           \
                if (cw)                                                                    \
                    m += x * cw[j];                                                        \
            }                                                                              \
            out_q[i - a] = q;                                                              \
            if (out_m)                                                                     \
                out_m[i - a] = m;                                                          \
        }                                                                                  \
        return 0;                                                                          \
    }

/* index_bytes: 4 or 8, the width of indices and indptr alike (checked by the caller) */
static int csr_sq_rows(const double *data, const void *indices, const void *indptr,
                       int index_bytes, int64_t a, int64_t b, const double *w,
                       const double *cw, Py_ssize_t d, double *out_q, double *out_m)
{
    if (index_bytes == 4)
        CSR_SQ_ROWS(int32_t)
    CSR_SQ_ROWS(int64_t)
}

PyDoc_STRVAR(csr_sq_norms_doc,
"csr_sq_norms(data, indices, indptr, a, b, w, cw, out_q, out_m)\n"
"\n"
"For the CSR rows a .. b - 1 (float64 data; indices and indptr both int32 or both int64;\n"
"columns in [0, len(w or cw)) or, without both, unchecked beyond indptr), writes out_q[i - a]\n"
"= sum of (x * x) * w[j] over the row's stored entries (w None: x * x) and, with cw,\n"
"out_m[i - a] = sum of x * cw[j], each summed in stored order from 0.0. w, cw and out_m may\n"
"be None (out_m None with cw None).");

static PyObject *csr_sq_norms(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *data_obj, *ix_obj, *ip_obj, *w_obj, *cw_obj, *q_obj, *m_obj;
    Py_ssize_t a, b;
    Py_buffer data = {0}, ix = {0}, ip = {0}, w = {0}, cw = {0}, q = {0}, m = {0};
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "OOOnnOOOO", &data_obj, &ix_obj, &ip_obj, &a, &b, &w_obj,
                          &cw_obj, &q_obj, &m_obj))
        goto done;
    if (!optional_buffer(data_obj, &data) || !optional_buffer(ix_obj, &ix)
        || !optional_buffer(ip_obj, &ip) || !optional_buffer(w_obj, &w)
        || !optional_buffer(cw_obj, &cw) || !optional_buffer(q_obj, &q)
        || !optional_buffer(m_obj, &m))
        goto done;
    if (!data.obj || !ix.obj || !ip.obj || !q.obj || data.itemsize != 8 || q.itemsize != 8
        || q.readonly || (w.obj && w.itemsize != 8) || (cw.obj && cw.itemsize != 8)
        || (m.obj && (m.itemsize != 8 || m.readonly)) || (cw.obj && !m.obj)) {
        PyErr_SetString(PyExc_TypeError, "data, w, cw must be float64, out_q (and out_m with "
                        "cw) writable float64");
        goto done;
    }
    if (ix.itemsize != ip.itemsize || (ix.itemsize != 4 && ix.itemsize != 8)) {
        PyErr_SetString(PyExc_TypeError, "indices and indptr must be both int32 or int64");
        goto done;
    }
    {
        const Py_ssize_t rows = ip.len / ip.itemsize - 1;
        if (a < 0 || b < a || b > rows || q.len / 8 < b - a || (m.obj && m.len / 8 < b - a)) {
            PyErr_SetString(PyExc_ValueError, "rows a .. b outside indptr or the outputs");
            goto done;
        }
        const int64_t last = ip.itemsize == 4 ? (int64_t)((const int32_t *)ip.buf)[b]
                                              : ((const int64_t *)ip.buf)[b];
        const int64_t first = ip.itemsize == 4 ? (int64_t)((const int32_t *)ip.buf)[a]
                                               : ((const int64_t *)ip.buf)[a];
        if (first < 0 || last < first || last > data.len / 8 || last > ix.len / ix.itemsize) {
            PyErr_SetString(PyExc_ValueError, "indptr points outside data or indices");
            goto done;
        }
        const Py_ssize_t d = w.obj ? w.len / 8 : cw.obj ? cw.len / 8 : PY_SSIZE_T_MAX;
        if (w.obj && cw.obj && cw.len != w.len) {
            PyErr_SetString(PyExc_ValueError, "w and cw must have the same length");
            goto done;
        }
        int status;
        Py_BEGIN_ALLOW_THREADS
        status = csr_sq_rows((const double *)data.buf, ix.buf, ip.buf, (int)ix.itemsize, a,
                             b, w.obj ? (const double *)w.buf : NULL,
                             cw.obj ? (const double *)cw.buf : NULL, d, (double *)q.buf,
                             m.obj ? (double *)m.buf : NULL);
        Py_END_ALLOW_THREADS
        if (status == -1) {
            PyErr_SetString(PyExc_ValueError, "a column index lies outside w or cw");
            goto done;
        }
        if (status == -3) {
            PyErr_SetString(PyExc_ValueError, "indptr decreases (not a CSR matrix)");
            goto done;
        }
    }
    result = Py_None;
    Py_INCREF(result);
done:
    release(&data);
    release(&ix);
    release(&ip);
    release(&w);
    release(&cw);
    release(&q);
    release(&m);
    return result;
}

static PyMethodDef methods[] = {
    {"scan_blocks", scan_blocks, METH_VARARGS, scan_blocks_doc},
    {"magnitude_counts", magnitude_counts, METH_VARARGS, magnitude_counts_doc},
    {"csr_sq_norms", csr_sq_norms, METH_VARARGS, csr_sq_norms_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_row_kernels_c",
    "The dense row scan of noisygd.oracles.rows, its CSR squared norms, and the magnitude "
    "counts of "
    "noisygd.mechanisms.feature_range (see _row_kernels.c).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__row_kernels_c(void) { return PyModule_Create(&module); }
