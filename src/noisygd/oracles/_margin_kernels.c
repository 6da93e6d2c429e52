/*
 * The fused margin kernel of noisygd.oracles.array (module doc of array.py), for CSR and
 * dense float64 rows.
 *
 * For each row block j (rows starts[j] .. starts[j+1]) and each row i of it:
 *
 *     z_i  = s_i (<x_i, w> - <c, w>) + kappa v                 (margin)
 *     r_i  = clip(phi'(z_i, y_i), +-C / ||[s_i (x_i - c), kappa]||)
 *     G[j] += s_i r_i x_i,  rsum[j] += r_i,  srsum[j] += s_i r_i
 *
 * so that the block's clipped gradient sum is [G[j] - c srsum[j], kappa rsum[j]]
 * (Lecture 12, eq. (12.1)). Rows go in groups of SUB: the margins of the group (its data
 * prefetched ahead, so that the reads of X from memory overlap the arithmetic), then their
 * residuals (the logistic exp calls in a loop of their own, vectorised with glibc's libmvec
 * where it exists), then the gradient while the group's rows are still in cache. X is read
 * from memory once per call. Sums over rows are sequential in row order, so a block's result
 * does not depend on how blocks are shared among threads. The GIL is released for the whole
 * call.
 *
 * CSR margins sum a row's nonzeros in order (as SciPy's csr_matvec); dense margins use four
 * partial sums over the columns (k mod 4), added as (s0 + s1) + (s2 + s3), in every build.
 *
 * Residuals phi' (kind): 0 logistic, -y / (1 + exp(y z)) = -y sigmoid(-y z); 1 squared,
 * z - y; 2 Huber with threshold t, clip(z - y, -t, t). Logistic labels, exactly -1 or +1,
 * may come as int8 (an eighth of the bytes read per step; the same values).
 *
 * The scale factors come sparse: s_i = scale_values[q] for the rows i = scale_rows[q]
 * (strictly increasing), 1 for every other row; a block walks them with a cursor from its
 * first row on. Multiplying by 1.0 is exact, so this gives the results of a dense vector of
 * factors bit for bit.
 *
 * Checked here: buffer sizes, the block range, that indptr's first and last entries lie
 * inside data, and that scale_rows is strictly increasing inside [0, n_rows). Trusted (checked once by the oracle that owns the arrays): indptr is
 * nondecreasing and every index is in [0, len(w)).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define PREFETCH 1024 /* CSR: nonzeros ahead */
#define PREFETCH_ROWS 16 /* dense: rows ahead */
#define SUB 256 /* rows per group: margins, residuals, gradient */

#if defined(NOISYGD_LIBMVEC) && defined(__x86_64__)
#define CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CLONES
#endif

#ifdef NOISYGD_LIBMVEC
/* glibc's vector exp (libmvec, at most 4 ulp) for the loop of exponentials below */
#pragma omp declare simd notinbranch
extern double exp(double);
#endif

/* e[t] = exp(y_t z_t), in a loop of its own (vectorised; an AVX2 clone where the CPU has it) */
CLONES static void exps(int64_t m, const double *restrict y, const double *restrict z,
                        double *restrict e)
{
#pragma omp simd
    for (int64_t t = 0; t < m; t++)
        e[t] = exp(y[t] * z[t]);
}

/* What every block of one call shares. */
typedef struct {
    int kind;
    double param;
    const double *y;     /* float64 targets, or NULL when y8 is given */
    const int8_t *y8;    /* int8 labels +-1 (logistic), or NULL */
    const int64_t *srows; /* rows whose s_i is not 1, increasing; NULL: all ones */
    const double *svals;  /* their s_i */
    Py_ssize_t ns;        /* how many */
    const double *inv;   /* 1/||[s_i (x_i - c), kappa]||, or NULL (no clipping) */
    const double *w;
    double cw, v, clip;
    Py_ssize_t d;
} Common;

/* The first q with srows[q] >= row (ns when none). */
static Py_ssize_t first_scaled(const Common *k, int64_t row)
{
    Py_ssize_t lo = 0, hi = k->ns;
    while (lo < hi) {
        const Py_ssize_t mid = lo + (hi - lo) / 2;
        if (k->srows[mid] < row)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Rows i0 .. i0+m-1: z holds their margins <x_i, w> on entry and s_i r_i on exit;
 * the residuals r_i and s_i r_i are added, in row order, to *rs and *srs. *cur is the
 * first scaled row's position at or after i0 (first_scaled), moved past the group. */
static void residuals(const Common *k, int64_t i0, int64_t m, double *restrict z, double *rs,
                      double *srs, Py_ssize_t *cur)
{
    double e[SUB], yb[SUB], sc[SUB];
    double a = *rs, b = *srs;
    const int scaled = k->srows != NULL;
    if (scaled) {
        for (int64_t t = 0; t < m; t++)
            sc[t] = 1.0;
        for (; *cur < k->ns && k->srows[*cur] < i0 + m; (*cur)++)
            sc[k->srows[*cur] - i0] = k->svals[*cur];
    }
    for (int64_t t = 0; t < m; t++) {
        double s = z[t] - k->cw;
        if (scaled)
            s *= sc[t];
        z[t] = s + k->v;
    }
    if (k->kind == 0) {
        if (k->y8)
            for (int64_t t = 0; t < m; t++)
                yb[t] = (double)k->y8[i0 + t];
        else
            memcpy(yb, k->y + i0, (size_t)m * sizeof(double));
        exps(m, yb, z, e);
    }
    for (int64_t t = 0; t < m; t++) {
        double r;
        if (k->kind == 0) {
            r = -yb[t] / (1.0 + e[t]);
        } else {
            r = z[t] - k->y[i0 + t];
            if (k->kind == 2)
                r = r > k->param ? k->param : (r < -k->param ? -k->param : r);
        }
        if (k->inv) {
            const double bound = k->clip * k->inv[i0 + t];
            r = r > bound ? bound : r;
            r = r < -bound ? -bound : r;
        }
        a += r;
        if (scaled)
            r *= sc[t];
        b += r;
        z[t] = r;
    }
    *rs = a;
    *srs = b;
}

#define DEFINE_CSR_BLOCK(NAME, ITYPE)                                                      \
static void NAME(const Common *k, const ITYPE *indptr, const ITYPE *indices,               \
                 const double *data, Py_ssize_t nnz, int64_t a, int64_t b, double *g,      \
                 double *rs, double *srs)                                                  \
{                                                                                          \
    double z[SUB];                                                                         \
    const double *w = k->w;                                                                \
    Py_ssize_t cur = k->srows ? first_scaled(k, a) : 0;                                    \
    for (int64_t i0 = a; i0 < b; i0 += SUB) {                                              \
        const int64_t m = b - i0 < SUB ? b - i0 : SUB;                                     \
        for (int64_t t = 0; t < m; t++) {                                                  \
            const Py_ssize_t p0 = (Py_ssize_t)indptr[i0 + t];                              \
            const Py_ssize_t p1 = (Py_ssize_t)indptr[i0 + t + 1];                          \
            Py_ssize_t pf = p0 + PREFETCH;                                                 \
            if (pf >= nnz)                                                                 \
                pf = nnz - 1;                                                              \
            if (pf >= 0) {                                                                 \
                __builtin_prefetch(&data[pf], 0, 3);                                       \
                __builtin_prefetch(&indices[pf], 0, 3);                                    \
            }                                                                              \
            double s = 0.0;                                                                \
            for (Py_ssize_t q = p0; q < p1; q++)                                           \
                s += data[q] * w[indices[q]];                                              \
            z[t] = s;                                                                      \
        }                                                                                  \
        residuals(k, i0, m, z, rs, srs, &cur);                                             \
        for (int64_t t = 0; t < m; t++) {                                                  \
            const double r = z[t];                                                         \
            const Py_ssize_t p1 = (Py_ssize_t)indptr[i0 + t + 1];                          \
            for (Py_ssize_t q = (Py_ssize_t)indptr[i0 + t]; q < p1; q++)                   \
                g[indices[q]] += data[q] * r;                                              \
        }                                                                                  \
    }                                                                                      \
}

DEFINE_CSR_BLOCK(csr_block_i32, int32_t)
DEFINE_CSR_BLOCK(csr_block_i64, int64_t)

CLONES static double dot(const double *restrict x, const double *restrict w, Py_ssize_t d)
{
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    Py_ssize_t q = 0;
    for (; q + 4 <= d; q += 4) {
        s0 += x[q] * w[q];
        s1 += x[q + 1] * w[q + 1];
        s2 += x[q + 2] * w[q + 2];
        s3 += x[q + 3] * w[q + 3];
    }
    for (; q < d; q++)
        s0 += x[q] * w[q];
    return (s0 + s1) + (s2 + s3);
}

CLONES static void axpy(double *restrict g, const double *restrict x, double r, Py_ssize_t d)
{
    for (Py_ssize_t q = 0; q < d; q++)
        g[q] += x[q] * r;
}

static void dense_block(const Common *k, const double *X, int64_t n, int64_t a, int64_t b,
                        double *g, double *rs, double *srs)
{
    double z[SUB];
    const Py_ssize_t d = k->d;
    Py_ssize_t cur = k->srows ? first_scaled(k, a) : 0;
    for (int64_t i0 = a; i0 < b; i0 += SUB) {
        const int64_t m = b - i0 < SUB ? b - i0 : SUB;
        for (int64_t t = 0; t < m; t++) {
            const int64_t ahead = i0 + t + PREFETCH_ROWS < n ? i0 + t + PREFETCH_ROWS : n - 1;
            __builtin_prefetch(X + ahead * d, 0, 3);
            z[t] = dot(X + (i0 + t) * d, k->w, d);
        }
        residuals(k, i0, m, z, rs, srs, &cur);
        for (int64_t t = 0; t < m; t++)
            axpy(g, X + (i0 + t) * d, z[t], d);
    }
}

static int need(Py_buffer *b, Py_ssize_t bytes, const char *name)
{
    if (b->len < bytes) {
        PyErr_Format(PyExc_ValueError, "%s holds %zd bytes, needs at least %zd", name, b->len,
                     bytes);
        return 0;
    }
    return 1;
}

/* A buffer for obj, or none (buf->obj NULL) when obj is None. */
static int optional_buffer(PyObject *obj, Py_buffer *buf)
{
    buf->obj = NULL;
    if (obj == Py_None)
        return 1;
    return PyObject_GetBuffer(obj, buf, PyBUF_SIMPLE) == 0;
}

static void release(Py_buffer *buf)
{
    if (buf->obj)
        PyBuffer_Release(buf);
}

PyDoc_STRVAR(margin_blocks_doc,
"margin_blocks(kind, param, layout, a, b, c, n_rows, y, labels_int8, scale_rows,\n"
"              scale_values, inv_aug, w, cw, v, clip, starts, j0, j1, G, rsum, srsum)\n\n"
"Blocks j0..j1-1 of the fused margin kernel (see _margin_kernels.c). layout 4 or 8: CSR\n"
"with int32 or int64 indices, a, b, c = indptr, indices, data; layout 0: dense, a = the\n"
"C-contiguous float64 rows (n_rows x len(w)), b and c None. y is float64, or int8 labels\n"
"+-1 when labels_int8 (logistic only). scale_rows (int64, strictly increasing in\n"
"[0, n_rows)) and scale_values (float64, as many): the rows whose scale factor is not 1 and\n"
"their factors, both None when every factor is 1; inv_aug may be None. Writes G[j] (len(w)\n"
"doubles each), rsum[j] and srsum[j].");

static PyObject *margin_blocks(PyObject *self, PyObject *args)
{
    (void)self;
    int kind, layout, labels_int8;
    double param, cw, v, clip;
    Py_ssize_t n_rows, j0, j1;
    PyObject *a_obj, *b_obj, *c_obj, *srows_obj, *svals_obj, *inv_obj;
    Py_buffer a = {0}, b = {0}, c = {0}, y = {0}, srows = {0}, svals = {0}, inv = {0};
    Py_buffer w = {0}, starts = {0};
    Py_buffer G = {0}, rsum = {0}, srsum = {0};
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "idiOOOnO&pOOOO&dddO&nnO&O&O&", &kind, &param, &layout,
                          &a_obj, &b_obj, &c_obj, &n_rows, optional_buffer, &y, &labels_int8,
                          &srows_obj, &svals_obj, &inv_obj, optional_buffer, &w, &cw, &v, &clip,
                          optional_buffer, &starts, &j0, &j1, optional_buffer, &G,
                          optional_buffer, &rsum, optional_buffer, &srsum))
        goto done;
    if (!y.obj || !w.obj || !starts.obj || !G.obj || !rsum.obj || !srsum.obj) {
        PyErr_SetString(PyExc_TypeError, "y, w, starts, G, rsum and srsum must be arrays");
        goto done;
    }
    if (G.readonly || rsum.readonly || srsum.readonly) {
        PyErr_SetString(PyExc_ValueError, "G, rsum and srsum must be writable");
        goto done;
    }
    if (kind < 0 || kind > 2 || (layout != 0 && layout != 4 && layout != 8)
        || (labels_int8 && kind != 0) || n_rows < 0) {
        PyErr_SetString(PyExc_ValueError,
                        "unknown loss kind or layout (int8 labels: logistic only)");
        goto done;
    }
    if (!optional_buffer(a_obj, &a) || !optional_buffer(srows_obj, &srows)
        || !optional_buffer(svals_obj, &svals)
        || !optional_buffer(inv_obj, &inv)
        || (layout != 0 && (!optional_buffer(b_obj, &b) || !optional_buffer(c_obj, &c))))
        goto done;
    if (!srows.obj != !svals.obj) {
        PyErr_SetString(PyExc_TypeError, "scale_rows and scale_values: both or neither");
        goto done;
    }
    if (!a.obj || (layout != 0 && (!b.obj || !c.obj))) {
        PyErr_SetString(PyExc_TypeError, "the rows' arrays must be arrays");
        goto done;
    }
    {
        const Py_ssize_t d = w.len / (Py_ssize_t)sizeof(double);
        const Py_ssize_t n_blocks = starts.len / (Py_ssize_t)sizeof(int64_t) - 1;
        const Py_ssize_t nnz = layout ? c.len / (Py_ssize_t)sizeof(double) : 0;
        const int64_t *st = (const int64_t *)starts.buf;
        if (n_blocks < 0 || j0 < 0 || j1 < j0 || j1 > n_blocks) {
            PyErr_SetString(PyExc_ValueError, "bad block range");
            goto done;
        }
        for (Py_ssize_t j = j0; j < j1; j++)
            if (st[j] < 0 || st[j] > st[j + 1] || st[j + 1] > n_rows) {
                PyErr_SetString(PyExc_ValueError, "block starts outside the rows");
                goto done;
            }
        if (!need(&y, n_rows * (labels_int8 ? 1 : 8), "y") || !need(&G, n_blocks * d * 8, "G")
            || !need(&rsum, n_blocks * 8, "rsum") || !need(&srsum, n_blocks * 8, "srsum")
            || (srows.obj && !need(&svals, srows.len, "scale_values"))
            || (inv.obj && !need(&inv, n_rows * 8, "inv_aug"))
            || (layout == 0 && !need(&a, n_rows * d * 8, "X"))
            || (layout != 0 && (!need(&a, (n_rows + 1) * layout, "indptr")
                                || !need(&b, nnz * layout, "indices"))))
            goto done;
        const Py_ssize_t ns = srows.obj ? srows.len / (Py_ssize_t)sizeof(int64_t) : 0;
        for (Py_ssize_t q = 0; q < ns; q++) { /* the cursor's walk relies on this */
            const int64_t row = ((const int64_t *)srows.buf)[q];
            if (row < 0 || row >= n_rows || (q && row <= ((const int64_t *)srows.buf)[q - 1])) {
                PyErr_SetString(PyExc_ValueError,
                                "scale_rows must increase strictly inside [0, n_rows)");
                goto done;
            }
        }
        if (layout != 0 && n_rows > 0) { /* the rows' nonzeros lie inside data and indices */
            const int64_t first = layout == 4 ? ((const int32_t *)a.buf)[0]
                                              : ((const int64_t *)a.buf)[0];
            const int64_t last = layout == 4 ? ((const int32_t *)a.buf)[n_rows]
                                             : ((const int64_t *)a.buf)[n_rows];
            if (first < 0 || last > nnz) {
                PyErr_SetString(PyExc_ValueError, "indptr points outside data");
                goto done;
            }
        }
        const Common k = {kind, param, labels_int8 ? NULL : (const double *)y.buf,
                          labels_int8 ? (const int8_t *)y.buf : NULL,
                          srows.obj ? (const int64_t *)srows.buf : NULL,
                          srows.obj ? (const double *)svals.buf : NULL, ns,
                          inv.obj ? (const double *)inv.buf : NULL, (const double *)w.buf,
                          cw, v, clip, d};
        double *Gb = (double *)G.buf, *rs = (double *)rsum.buf, *srs = (double *)srsum.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t j = j0; j < j1; j++) {
            double *g = Gb + j * d;
            memset(g, 0, (size_t)d * sizeof(double));
            rs[j] = 0.0;
            srs[j] = 0.0;
            if (layout == 4)
                csr_block_i32(&k, (const int32_t *)a.buf, (const int32_t *)b.buf,
                              (const double *)c.buf, nnz, st[j], st[j + 1], g, rs + j, srs + j);
            else if (layout == 8)
                csr_block_i64(&k, (const int64_t *)a.buf, (const int64_t *)b.buf,
                              (const double *)c.buf, nnz, st[j], st[j + 1], g, rs + j, srs + j);
            else
                dense_block(&k, (const double *)a.buf, n_rows, st[j], st[j + 1], g, rs + j,
                            srs + j);
        }
        Py_END_ALLOW_THREADS
    }
    result = Py_None;
    Py_INCREF(result);
done:
    release(&a);
    release(&b);
    release(&c);
    release(&y);
    release(&srows);
    release(&svals);
    release(&inv);
    release(&w);
    release(&starts);
    release(&G);
    release(&rsum);
    release(&srsum);
    return result;
}

static PyMethodDef methods[] = {
    {"margin_blocks", margin_blocks, METH_VARARGS, margin_blocks_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_margin_kernels_c",
    "The fused margin kernel of noisygd.oracles.array (see _margin_kernels.c).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__margin_kernels_c(void) { return PyModule_Create(&module); }
