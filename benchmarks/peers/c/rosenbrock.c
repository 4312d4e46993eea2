/* Chained Rosenbrock, value and gradient, written by hand: the floor symad's native code aims at.
 *
 *   f(x) = sum_{i=0}^{n-2} 100*(x[i+1] - x[i]^2)^2 + (1 - x[i])^2
 *
 * Built by benchmarks/peers.py with `gcc -O3 -march=native -shared -fPIC` and called through ctypes.
 */
#include <stddef.h>

double rosen_v(const double *x, int n) {
    double f = 0.0;
    for (int i = 0; i + 1 < n; i++) {
        double t = x[i + 1] - x[i] * x[i], u = 1.0 - x[i];
        f += 100.0 * t * t + u * u;
    }
    return f;
}

double rosen_vg(const double *x, int n, double *g) {
    double f = 0.0;
    for (int i = 0; i < n; i++) g[i] = 0.0;
    for (int i = 0; i + 1 < n; i++) {
        double t = x[i + 1] - x[i] * x[i], u = 1.0 - x[i];
        f += 100.0 * t * t + u * u;
        g[i] += -400.0 * t * x[i] - 2.0 * u;
        g[i + 1] += 200.0 * t;
    }
    return f;
}

/* A batch of `m` points, row-major (m, n): values f[m], gradients g[m, n]. */
void rosen_vg_batch(const double *x, long m, int n, double *f, double *g) {
    for (long k = 0; k < m; k++) f[k] = rosen_vg(x + k * n, n, g + k * n);
}

void rosen_v_batch(const double *x, long m, int n, double *f) {
    for (long k = 0; k < m; k++) f[k] = rosen_v(x + k * n, n);
}
