/* The export test's C program (test/export/export_tests.sh): links the library `wmtune export
 * --name k` made of the workloads listed below and calls every kernel through k.h.
 *
 *   kernels_test list           the kernels: name, workload spec, input count
 *   kernels_test gen DIR        writes each kernel's inputs to DIR/NAME.in0.npy, ...
 *   kernels_test check DIR      runs each kernel on those inputs and compares its output with
 *                               DIR/NAME.ref.npy (from `wmtune run -w SPEC`): max relative error
 *                               <= 1e-5; then null and misaligned pointers (must return 1), one
 *                               thread, and two threads calling kernels at once
 * Exit 0 when everything matches. Compiled with -std=c99 -Wall -Werror. */
#define _POSIX_C_SOURCE 200112L
#include "k.h"
#include "npy_c.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_IN 2

struct kernel {
  const char* name;
  const char* spec;
  int (*call)(void** args); /* inputs, then the output */
  int nin;
  int rank[MAX_IN];
  long shape[MAX_IN][4];
};

static int call_gemm(void** a) {
  return k_gemm(a[0], a[1], a[2]);
}
static int call_conv2d(void** a) {
  return k_conv2d_0(a[0], a[1], a[2]);
}
static int call_grouped(void** a) {
  return k_conv2d_1(a[0], a[1], a[2]);
}
static int call_depthwise(void** a) {
  return k_depthwise_conv2d(a[0], a[1], a[2]);
}
static int call_batch_matmul(void** a) {
  return k_batch_matmul(a[0], a[1], a[2]);
}
static int call_softmax(void** a) {
  return k_softmax(a[0], a[1]);
}
static int call_norm(void** a) {
  return k_norm(a[0], a[1]);
}

static const struct kernel kernels[] = {
    {"gemm", "gemm:M=64,N=48,K=32", call_gemm, 2, {2, 2}, {{64, 32}, {32, 48}}},
    {"conv2d",
     "conv2d:N=1,C=8,H=10,W=10,K=16,R=3,S=3,pad=1",
     call_conv2d,
     2,
     {4, 4},
     {{1, 8, 10, 10}, {16, 8, 3, 3}}},
    {"grouped",
     "conv2d:N=1,C=8,H=10,W=10,K=8,R=3,S=3,pad=1,groups=4",
     call_grouped,
     2,
     {4, 4},
     {{1, 8, 10, 10}, {8, 2, 3, 3}}},
    {"depthwise",
     "depthwise_conv2d:N=1,C=8,H=12,W=12,R=3,S=3,pad=1",
     call_depthwise,
     2,
     {4, 4},
     {{1, 8, 12, 12}, {8, 1, 3, 3}}},
    {"batch_matmul",
     "batch_matmul:B=3,M=16,N=24,K=8",
     call_batch_matmul,
     2,
     {3, 3},
     {{3, 16, 8}, {3, 8, 24}}},
    {"softmax", "softmax:M=8,N=100", call_softmax, 1, {2}, {{8, 100}}},
    {"norm", "norm:B=1,M=16,N=32", call_norm, 1, {3}, {{1, 16, 32}}},
};
#define NKERNELS (int)(sizeof kernels / sizeof kernels[0])

/* DIR/NAME.SUFFIX.npy in the caller's buffer (threads load files at the same time). */
struct path_buf {
  char s[4096];
};
static const char* path(struct path_buf* b, const char* dir, const char* name, const char* suffix) {
  snprintf(b->s, sizeof b->s, "%s/%s.%s.npy", dir, name, suffix);
  return b->s;
}

static int gen(const char* dir) {
  unsigned state = 12345u;
  int k, i;
  struct path_buf p;
  for (k = 0; k < NKERNELS; ++k)
    for (i = 0; i < kernels[k].nin; ++i) {
      long n = 1, e;
      int d;
      char suffix[8];
      float* x;
      for (d = 0; d < kernels[k].rank[i]; ++d) n *= kernels[k].shape[i][d];
      x = malloc((size_t)n * sizeof *x);
      if (!x) return 1;
      for (e = 0; e < n; ++e) { /* a fixed LCG: uniform in [-1, 1) */
        state = state * 1664525u + 1013904223u;
        x[e] = (float)((state >> 8) / 8388608.0 - 1.0);
      }
      snprintf(suffix, sizeof suffix, "in%d", i);
      if (npy_write_f32(path(&p, dir, kernels[k].name, suffix), x, kernels[k].rank[i],
                        kernels[k].shape[i])) {
        fprintf(stderr, "cannot write %s\n", p.s);
        free(x);
        return 1;
      }
      free(x);
    }
  return 0;
}

/* A kernel's inputs, its reference output and a zeroed output buffer, all 64-byte aligned. */
struct run {
  void* args[MAX_IN + 1];
  float* ref;
  long nout;
};

static int load(const char* dir, int k, struct run* r) {
  int i;
  long n;
  char suffix[8];
  struct path_buf p;
  memset(r, 0, sizeof *r);
  for (i = 0; i < kernels[k].nin; ++i) {
    snprintf(suffix, sizeof suffix, "in%d", i);
    r->args[i] = npy_read_f32(path(&p, dir, kernels[k].name, suffix), &n);
    if (!r->args[i]) {
      fprintf(stderr, "cannot read %s\n", p.s);
      return 1;
    }
  }
  r->ref = npy_read_f32(path(&p, dir, kernels[k].name, "ref"), &r->nout);
  if (!r->ref) {
    fprintf(stderr, "cannot read %s\n", p.s);
    return 1;
  }
  r->args[kernels[k].nin] = alloc64((size_t)r->nout * sizeof(float));
  return r->args[kernels[k].nin] == NULL;
}

static void release(int k, struct run* r) {
  int i;
  for (i = 0; i <= kernels[k].nin; ++i) free(r->args[i]);
  free(r->ref);
}

/* Runs kernel k on its loaded inputs; 0 when it returns 0 and matches the reference. */
static int run_and_compare(int k, struct run* r, const char* what) {
  float* out = r->args[kernels[k].nin];
  double err;
  memset(out, 0, (size_t)r->nout * sizeof(float));
  if (kernels[k].call(r->args) != 0) {
    fprintf(stderr, "%s (%s): the call returned an error\n", kernels[k].name, what);
    return 1;
  }
  err = max_rel_error(out, r->ref, r->nout);
  if (strcmp(what, "thread") != 0 || !(err <= 1e-5))
    printf("%-13s %-8s max relative error %.3g\n", kernels[k].name, what, err);
  return !(err <= 1e-5);
}

struct thread_arg {
  const char* dir;
  int k, failed;
};

static void* thread_main(void* p) {
  struct thread_arg* a = p;
  struct run r;
  int rep;
  a->failed = load(a->dir, a->k, &r);
  for (rep = 0; rep < 20 && !a->failed; ++rep) a->failed = run_and_compare(a->k, &r, "thread");
  release(a->k, &r);
  return NULL;
}

static int check(const char* dir) {
  int k, failed = 0;
  struct thread_arg ta[2];
  pthread_t th[2];
  for (k = 0; k < NKERNELS; ++k) {
    struct run r;
    void* saved;
    if (load(dir, k, &r)) return 1;
    k_set_threads(0);
    failed |= run_and_compare(k, &r, "all");
    k_set_threads(1);
    failed |= run_and_compare(k, &r, "1thread");
    k_set_threads(0);
    /* a null pointer, then a misaligned one: 1, and the output untouched */
    saved = r.args[0];
    r.args[0] = NULL;
    if (kernels[k].call(r.args) != 1) {
      fprintf(stderr, "%s: a null pointer was not refused\n", kernels[k].name);
      failed = 1;
    }
    r.args[0] = (char*)saved + 4;
    if (kernels[k].call(r.args) != 1) {
      fprintf(stderr, "%s: a misaligned pointer was not refused\n", kernels[k].name);
      failed = 1;
    }
    r.args[0] = saved;
    release(k, &r);
  }
  /* two threads at once, on different kernels */
  for (k = 0; k < 2; ++k) {
    ta[k].dir = dir;
    ta[k].k = k == 0 ? 1 : 4;
    ta[k].failed = 0;
    if (pthread_create(&th[k], NULL, thread_main, &ta[k]) != 0) return 1;
  }
  for (k = 0; k < 2; ++k) {
    pthread_join(th[k], NULL);
    failed |= ta[k].failed;
  }
  printf(failed ? "FAILED\n" : "all kernels match\n");
  return failed;
}

int main(int argc, char** argv) {
  int k;
  if (argc == 2 && strcmp(argv[1], "list") == 0) {
    for (k = 0; k < NKERNELS; ++k)
      printf("%s %s %d\n", kernels[k].name, kernels[k].spec, kernels[k].nin);
    return 0;
  }
  if (argc == 3 && strcmp(argv[1], "gen") == 0) return gen(argv[2]);
  if (argc == 3 && strcmp(argv[1], "check") == 0) return check(argv[2]);
  fprintf(stderr, "usage: kernels_test list | gen DIR | check DIR\n");
  return 2;
}
