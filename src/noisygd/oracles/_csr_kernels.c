/*
 * The fused CSR kernel of noisygd.oracles.array (module doc of _csr_kernels.py).
 *
 * For each row block j of a canonical CSR matrix (rows starts[j] .. starts[j+1]) and each
 * row i of it, in one pass over the row's nonzeros while they are in L1:
 *
 *     z_i  = s_i (<x_i, w> - <c, w>) + kappa v                 (margin)
 *     r_i  = clip(phi'(z_i, y_i), +-C / ||[s_i (x_i - c), kappa]||)
 *     G[j] += s_i r_i x_i,  rsum[j] += r_i,  srsum[j] += s_i r_i
 *
 * so that the block's clipped gradient sum is [G[j] - c srsum[j], kappa rsum[j]]
 * (Lecture 12, eq. (12.1)). Rows go in groups of SUB: the margins of the group (its
 * nonzeros prefetched PREFETCH entries ahead, so that the gather <x_i, w> overlaps the read
 * of X from memory), then their residuals (independent exp calls that pipeline), then the
 * gradient while the group's nonzeros are still in L1/L2. Sums are
 * sequential in row and nonzero order (the order of SciPy's csr_matvec/csc_matvec), so a
 * block's result does not depend on how blocks are shared among threads. The GIL is
 * released for the whole call.
 *
 * Residuals phi' (loss_kind): 0 logistic, -y / (1 + exp(y z)) = -y sigmoid(-y z);
 * 1 squared, z - y; 2 Huber with threshold t, clip(z - y, -t, t). Logistic labels, exactly
 * -1 or +1, may come as int8 (an eighth of the bytes read per step; the same values).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define PREFETCH 1024 /* nonzeros ahead */
#define SUB 256 /* rows per pass: margins, residuals, gradient */

#ifdef NOISYGD_LIBMVEC
/* glibc's vector exp (libmvec, at most 4 ulp) for the loop of exponentials below */
#pragma omp declare simd notinbranch
extern double exp(double);
#endif

/* e[t] = exp(y_t z_t) for the logistic residual, in a loop of its own (vectorised; an
 * AVX2 clone is chosen at load time where the CPU has it) */
#if defined(NOISYGD_LIBMVEC) && defined(__x86_64__)
__attribute__((target_clones("avx2", "default")))
#endif
static void exps(int64_t m, const double *restrict y, const double *restrict z,
                 double *restrict e)
{
#pragma omp simd
    for (int64_t t = 0; t < m; t++)
        e[t] = exp(y[t] * z[t]);
}

static inline double residual(int kind, double param, double z, double y)
{
    if (kind == 0)
        return -y / (1.0 + exp(y * z));
    double e = z - y;
    if (kind == 2)
        e = e > param ? param : (e < -param ? -param : e);
    return e;
}

#define DEFINE_BLOCKS(NAME, ITYPE)                                                         \
static void NAME(int kind, double param, const ITYPE *indptr, const ITYPE *indices,        \
                 const double *data, Py_ssize_t nnz, const double *y, const int8_t *y8,    \
                 const double *scale,                                                      \
                 const double *inv_aug, const double *w, double cw, double v, double clip, \
                 const int64_t *starts, Py_ssize_t j0, Py_ssize_t j1, Py_ssize_t d,       \
                 double *G, double *rsum, double *srsum)                                   \
{                                                                                          \
    double z[SUB], e[SUB], yb[SUB];                                                        \
    for (Py_ssize_t j = j0; j < j1; j++) {                                                 \
        double *g = G + j * d;                                                             \
        double rs = 0.0, srs = 0.0;                                                        \
        memset(g, 0, (size_t)d * sizeof(double));                                          \
        for (int64_t i0 = starts[j]; i0 < starts[j + 1]; i0 += SUB) {                      \
            const int64_t m = starts[j + 1] - i0 < SUB ? starts[j + 1] - i0 : SUB;         \
            for (int64_t t = 0; t < m; t++) { /* margins */                                \
                const int64_t i = i0 + t;                                                  \
                const Py_ssize_t p0 = (Py_ssize_t)indptr[i], p1 = (Py_ssize_t)indptr[i + 1]; \
                Py_ssize_t pf = p0 + PREFETCH;                                             \
                if (pf >= nnz)                                                             \
                    pf = nnz - 1;                                                          \
                if (pf >= 0) {                                                             \
                    __builtin_prefetch(&data[pf], 0, 3);                                   \
                    __builtin_prefetch(&indices[pf], 0, 3);                                \
                }                                                                          \
                double s = 0.0;                                                            \
                for (Py_ssize_t k = p0; k < p1; k++)                                       \
                    s += data[k] * w[indices[k]];                                          \
                s -= cw;                                                                   \
                if (scale)                                                                 \
                    s *= scale[i];                                                         \
                z[t] = s + v;                                                              \
            }                                                                              \
            if (kind == 0) {                                                               \
                if (y8)                                                                    \
                    for (int64_t t = 0; t < m; t++)                                        \
                        yb[t] = (double)y8[i0 + t];                                        \
                else                                                                       \
                    memcpy(yb, y + i0, (size_t)m * sizeof(double));                        \
                exps(m, yb, z, e);                                                         \
            }                                                                              \
            for (int64_t t = 0; t < m; t++) { /* clipped residuals, their sums */          \
                const int64_t i = i0 + t;                                                  \
                double r = kind == 0 ? -yb[t] / (1.0 + e[t]) : residual(kind, param, z[t], y[i]); \
                if (inv_aug) {                                                             \
                    const double b = clip * inv_aug[i];                                    \
                    r = r > b ? b : r;                                                     \
                    r = r < -b ? -b : r;                                                   \
                }                                                                          \
                rs += r;                                                                   \
                if (scale)                                                                 \
                    r *= scale[i];                                                         \
                srs += r;                                                                  \
                z[t] = r;                                                                  \
            }                                                                              \
            for (int64_t t = 0; t < m; t++) { /* the gradient, while the rows are cached */ \
                const int64_t i = i0 + t;                                                  \
                const double r = z[t];                                                     \
                for (Py_ssize_t k = (Py_ssize_t)indptr[i]; k < (Py_ssize_t)indptr[i + 1]; k++) \
                    g[indices[k]] += data[k] * r;                                          \
            }                                                                              \
        }                                                                                  \
        rsum[j] = rs;                                                                      \
        srsum[j] = srs;                                                                    \
    }                                                                                      \
}

DEFINE_BLOCKS(blocks_i32, int32_t)
DEFINE_BLOCKS(blocks_i64, int64_t)

static int need(Py_buffer *b, Py_ssize_t bytes, const char *name)
{
    if (b->len < bytes) {
        PyErr_Format(PyExc_ValueError, "%s holds %zd bytes, needs at least %zd", name, b->len,
                     bytes);
        return 0;
    }
    return 1;
}

PyDoc_STRVAR(margin_blocks_doc,
"margin_blocks(kind, param, index_bytes, indptr, indices, data, y, labels_int8, scale,\n"
"              inv_aug, w, cw, v, clip, starts, j0, j1, G, rsum, srsum)\n\n"
"Blocks j0..j1-1 of the fused CSR kernel (see _csr_kernels.c); y is float64, or int8\n"
"labels +-1 when labels_int8 (logistic only); scale and inv_aug may be None. Writes G[j]\n"
"(d doubles each), rsum[j] and srsum[j].");

static PyObject *margin_blocks(PyObject *self, PyObject *args)
{
    (void)self;
    int kind, index_bytes, labels_int8;
    double param, cw, v, clip;
    Py_ssize_t j0, j1;
    Py_buffer indptr, indices, data, y, w, starts, G, rsum, srsum;
    Py_buffer scale = {0}, inv_aug = {0};
    PyObject *scale_obj, *inv_obj;
    if (!PyArg_ParseTuple(args, "idiy*y*y*y*pOOy*dddy*nnw*w*w*", &kind, &param, &index_bytes,
                          &indptr, &indices, &data, &y, &labels_int8, &scale_obj, &inv_obj, &w,
                          &cw, &v, &clip, &starts, &j0, &j1, &G, &rsum, &srsum))
        return NULL;
    PyObject *result = NULL;
    int have_scale = 0, have_inv = 0;
    if (scale_obj != Py_None) {
        if (PyObject_GetBuffer(scale_obj, &scale, PyBUF_SIMPLE) < 0)
            goto done;
        have_scale = 1;
    }
    if (inv_obj != Py_None) {
        if (PyObject_GetBuffer(inv_obj, &inv_aug, PyBUF_SIMPLE) < 0)
            goto done;
        have_inv = 1;
    }
    if (kind < 0 || kind > 2 || (index_bytes != 4 && index_bytes != 8)
        || (labels_int8 && kind != 0)) {
        PyErr_SetString(PyExc_ValueError,
                        "unknown loss kind or index width (int8 labels: logistic only)");
        goto done;
    }
    {
        const Py_ssize_t n_rows = indptr.len / index_bytes - 1;
        const Py_ssize_t nnz = data.len / (Py_ssize_t)sizeof(double);
        const Py_ssize_t d = w.len / (Py_ssize_t)sizeof(double);
        const Py_ssize_t n_blocks = starts.len / (Py_ssize_t)sizeof(int64_t) - 1;
        if (n_rows < 0 || n_blocks < 0 || j0 < 0 || j1 < j0 || j1 > n_blocks) {
            PyErr_SetString(PyExc_ValueError, "bad block range");
            goto done;
        }
        const int64_t *st = (const int64_t *)starts.buf;
        if (n_blocks > 0 && (st[0] < 0 || st[n_blocks] > n_rows)) {
            PyErr_SetString(PyExc_ValueError, "block starts outside the rows");
            goto done;
        }
        if (!need(&indices, nnz * index_bytes, "indices") || !need(&y, n_rows * (labels_int8 ? 1 : 8), "y")
            || !need(&G, n_blocks * d * 8, "G") || !need(&rsum, n_blocks * 8, "rsum")
            || !need(&srsum, n_blocks * 8, "srsum")
            || (have_scale && !need(&scale, n_rows * 8, "scale"))
            || (have_inv && !need(&inv_aug, n_rows * 8, "inv_aug")))
            goto done;
        Py_BEGIN_ALLOW_THREADS
        if (index_bytes == 4)
            blocks_i32(kind, param, (const int32_t *)indptr.buf, (const int32_t *)indices.buf,
                       (const double *)data.buf, nnz,
                       labels_int8 ? NULL : (const double *)y.buf,
                       labels_int8 ? (const int8_t *)y.buf : NULL,
                       have_scale ? (const double *)scale.buf : NULL,
                       have_inv ? (const double *)inv_aug.buf : NULL, (const double *)w.buf,
                       cw, v, clip, st, j0, j1, d, (double *)G.buf, (double *)rsum.buf,
                       (double *)srsum.buf);
        else
            blocks_i64(kind, param, (const int64_t *)indptr.buf, (const int64_t *)indices.buf,
                       (const double *)data.buf, nnz,
                       labels_int8 ? NULL : (const double *)y.buf,
                       labels_int8 ? (const int8_t *)y.buf : NULL,
                       have_scale ? (const double *)scale.buf : NULL,
                       have_inv ? (const double *)inv_aug.buf : NULL, (const double *)w.buf,
                       cw, v, clip, st, j0, j1, d, (double *)G.buf, (double *)rsum.buf,
                       (double *)srsum.buf);
        Py_END_ALLOW_THREADS
    }
    result = Py_None;
    Py_INCREF(result);
done:
    if (have_scale)
        PyBuffer_Release(&scale);
    if (have_inv)
        PyBuffer_Release(&inv_aug);
    PyBuffer_Release(&indptr);
    PyBuffer_Release(&indices);
    PyBuffer_Release(&data);
    PyBuffer_Release(&y);
    PyBuffer_Release(&w);
    PyBuffer_Release(&starts);
    PyBuffer_Release(&G);
    PyBuffer_Release(&rsum);
    PyBuffer_Release(&srsum);
    return result;
}

static PyMethodDef methods[] = {
    {"margin_blocks", margin_blocks, METH_VARARGS, margin_blocks_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_csr_kernels_c",
    "The fused CSR gradient kernel of noisygd.oracles.array (see _csr_kernels.c).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__csr_kernels_c(void) { return PyModule_Create(&module); }
