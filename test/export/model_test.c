/* The model export test's C program (test/export/model_tests.sh): links the library `wmtune
 * export MODEL.onnx --name net` made and runs it through net.h. WEIGHTS is the .weights file of an
 * export with external weights, or '-' when they are embedded.
 *
 *   model_test info WEIGHTS              prints each input and output: name dtype rank bytes dims
 *   model_test run WEIGHTS DIR IN.npy..  runs the model on the inputs, writes DIR/out<i>.npy
 *   model_test compare GOT.npy WANT.npy  float32: max relative error <= 1e-5; other types: equal
 *   model_test threads WEIGHTS IN.npy..  two handles in two threads, and one handle shared by two
 *                                        threads, 4 runs each: every run equals a first run
 *   model_test errors WEIGHTS IN.npy..   NULL handle, arrays and tensors, wrong counts, bad
 *                                        indices: an error code and a message, never a crash
 *   model_test open WEIGHTS              opens and closes; the message and exit 1 on failure
 *   model_test bench WEIGHTS THREADS SECONDS IN.npy..
 *                                        times wm_model_open (median of 5 opens) and one run
 *                                        (median of the runs in SECONDS after 3 warm-up runs)
 *                                        on THREADS threads (0: all); a benchmark, never a test
 * Exit 0 when everything holds. Compiled with -std=c99 -Wall -Werror. */
#define _POSIX_C_SOURCE 200112L /* pthread, clock_gettime */
#include "net.h"
#include "npy_c.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_IO 16

/* The .npy type and element size of a wm_model dtype name. */
static const char* npy_descr(const char* dtype, size_t* elem) {
  static const struct {
    const char *dtype, *descr;
    size_t elem;
  } types[] = {{"f32", "<f4", 4},
               {"f16", "<f2", 2},
               {"i32", "<i4", 4},
               {"i64", "<i8", 8},
               {"bool", "|b1", 1}};
  size_t i;
  for (i = 0; i < sizeof types / sizeof types[0]; ++i)
    if (strcmp(types[i].dtype, dtype) == 0) {
      *elem = types[i].elem;
      return types[i].descr;
    }
  return NULL;
}

static wm_model* open_model(const char* weights) {
  char err[512];
  wm_model* m = wm_model_open(strcmp(weights, "-") == 0 ? NULL : weights, err, sizeof err);
  if (!m) printf("open: %s\n", err);
  return m;
}

/* The model's inputs, read from the files (their type and size checked); NULL on failure. */
struct io {
  int nin, nout;
  void* in[MAX_IO];
  void* out[MAX_IO];
};

static int load_inputs(const wm_model* m, int nfiles, char** files, struct io* io) {
  int i;
  memset(io, 0, sizeof *io);
  io->nin = wm_model_num_inputs(m);
  io->nout = wm_model_num_outputs(m);
  if (io->nin != nfiles || io->nin > MAX_IO || io->nout > MAX_IO) {
    printf("the model has %d inputs and %d outputs; %d input files given\n", io->nin, io->nout,
           nfiles);
    return 1;
  }
  for (i = 0; i < io->nin; ++i) {
    size_t elem = 0;
    const char* descr = npy_descr(wm_model_input_dtype(m, i), &elem);
    long count = 0;
    if (!descr) return 1;
    io->in[i] = npy_read(files[i], descr, elem, &count);
    if (!io->in[i] || (size_t)count * elem != wm_model_input_bytes(m, i)) {
      printf("input %d (%s): %s is not %zu bytes of %s\n", i, wm_model_input_name(m, i), files[i],
             wm_model_input_bytes(m, i), descr);
      return 1;
    }
  }
  for (i = 0; i < io->nout; ++i)
    if (!(io->out[i] = alloc64(wm_model_output_bytes(m, i)))) return 1;
  return 0;
}

static void free_io(struct io* io) {
  int i;
  for (i = 0; i < MAX_IO; ++i) {
    free(io->in[i]);
    free(io->out[i]);
  }
}

static int run_once(wm_model* m, struct io* io) {
  if (wm_model_run_n(m, io->nin, (const void* const*)io->in, io->nout, io->out) != 0) {
    printf("run: %s\n", wm_model_last_error(m));
    return 1;
  }
  if (strcmp(wm_model_last_error(m), "") != 0) {
    printf("run: a successful run left the message '%s'\n", wm_model_last_error(m));
    return 1;
  }
  return 0;
}

static void print_tensor(const char* what, int i, const char* name, const char* dtype, int rank,
                         size_t bytes, const int64_t* dims) {
  int d;
  printf("%s %d %s %s %d %zu", what, i, name, dtype, rank, bytes);
  for (d = 0; d < rank; ++d) printf(" %lld", (long long)dims[d]);
  printf("\n");
}

static int cmd_info(wm_model* m) {
  int i;
  for (i = 0; i < wm_model_num_inputs(m); ++i)
    print_tensor("input", i, wm_model_input_name(m, i), wm_model_input_dtype(m, i),
                 wm_model_input_rank(m, i), wm_model_input_bytes(m, i), wm_model_input_shape(m, i));
  for (i = 0; i < wm_model_num_outputs(m); ++i)
    print_tensor("output", i, wm_model_output_name(m, i), wm_model_output_dtype(m, i),
                 wm_model_output_rank(m, i), wm_model_output_bytes(m, i),
                 wm_model_output_shape(m, i));
  return 0;
}

static int cmd_run(wm_model* m, const char* dir, int nfiles, char** files) {
  struct io io;
  int i, d, rc = load_inputs(m, nfiles, files, &io);
  if (!rc) rc = run_once(m, &io);
  for (i = 0; !rc && i < io.nout; ++i) {
    char path[4096];
    long shape[16];
    size_t elem = 0;
    const char* descr = npy_descr(wm_model_output_dtype(m, i), &elem);
    int rank = wm_model_output_rank(m, i);
    if (rank > 16 || !descr) return 1;
    for (d = 0; d < rank; ++d) shape[d] = (long)wm_model_output_shape(m, i)[d];
    snprintf(path, sizeof path, "%s/out%d.npy", dir, i);
    if (npy_write(path, descr, elem, io.out[i], rank, shape) != 0) {
      printf("cannot write %s\n", path);
      rc = 1;
    }
  }
  free_io(&io);
  return rc;
}

static int cmd_compare(const char* got_path, const char* want_path) {
  static const struct {
    const char* descr;
    size_t elem;
  } exact[] = {{"<i8", 8}, {"<i4", 4}, {"|b1", 1}};
  long n1 = -1, n2 = -2;
  float* got = npy_read_f32(got_path, &n1);
  float* want = npy_read_f32(want_path, &n2);
  size_t k;
  int rc = 1;
  if (got && want && n1 == n2) {
    double err = max_rel_error(got, want, n1);
    printf("%s: %ld elements, max relative error %.3g\n", got_path, n1, err);
    rc = !(err <= 1e-5);
  }
  for (k = 0; !got && k < sizeof exact / sizeof exact[0]; ++k) {
    got = npy_read(got_path, exact[k].descr, exact[k].elem, &n1);
    want = got ? npy_read(want_path, exact[k].descr, exact[k].elem, &n2) : NULL;
    if (got && want && n1 == n2) {
      rc = memcmp(got, want, (size_t)n1 * exact[k].elem) != 0;
      printf("%s: %ld elements of %s, %s\n", got_path, n1, exact[k].descr,
             rc ? "DIFFERENT" : "equal");
    }
  }
  if (rc && !(got && want && n1 == n2))
    printf("%s and %s: not two arrays alike\n", got_path, want_path);
  free(got);
  free(want);
  return rc;
}

/* A thread's runs: each output equals the first run's, byte for byte (the same kernels on the
 * same inputs; the parallel runtime does not split reductions). */
struct worker {
  wm_model* m;
  struct io io;
  void* first[MAX_IO];
  int runs, failed;
};

static void* worker_main(void* p) {
  struct worker* w = p;
  int r, i;
  for (r = 0; r < w->runs; ++r) {
    if (run_once(w->m, &w->io) != 0) {
      w->failed = 1;
      return NULL;
    }
    for (i = 0; i < w->io.nout; ++i)
      if (memcmp(w->io.out[i], w->first[i], wm_model_output_bytes(w->m, i)) != 0) {
        printf("thread run %d: output %d differs from the first run\n", r, i);
        w->failed = 1;
      }
  }
  return NULL;
}

/* Runs the workers (each on its handle, maybe the same one) at once; 0 when all agree. */
static int run_workers(struct worker* w, int n) {
  pthread_t t[4];
  int k, rc = 0;
  for (k = 0; k < n; ++k)
    if (pthread_create(&t[k], NULL, worker_main, &w[k]) != 0) return 1;
  for (k = 0; k < n; ++k) {
    pthread_join(t[k], NULL);
    rc |= w[k].failed;
  }
  return rc;
}

static int cmd_threads(const char* weights, int nfiles, char** files) {
  struct worker w[2];
  int k, i, rc = 0;
  memset(w, 0, sizeof w);
  for (k = 0; k < 2; ++k) {
    if (!(w[k].m = open_model(weights)) || load_inputs(w[k].m, nfiles, files, &w[k].io) ||
        run_once(w[k].m, &w[k].io))
      return 1;
    for (i = 0; i < w[k].io.nout; ++i) {
      size_t bytes = wm_model_output_bytes(w[k].m, i);
      if (!(w[k].first[i] = alloc64(bytes))) return 1;
      memcpy(w[k].first[i], w[k].io.out[i], bytes);
    }
    w[k].runs = 4;
  }
  wm_model_set_threads(w[1].m, 1);
  if (run_workers(w, 2)) {
    printf("two handles in two threads: FAILED\n");
    rc = 1;
  } else {
    printf("two handles in two threads: ok\n");
  }
  /* one handle, two threads: the runs take turns (each thread has its own buffers) */
  wm_model_close(w[1].m);
  w[1].m = w[0].m;
  if (run_workers(w, 2)) {
    printf("one handle in two threads: FAILED\n");
    rc = 1;
  } else {
    printf("one handle in two threads: ok\n");
  }
  wm_model_close(w[0].m);
  for (k = 0; k < 2; ++k) {
    free_io(&w[k].io);
    for (i = 0; i < MAX_IO; ++i) free(w[k].first[i]);
  }
  return rc;
}

#define EXPECT(cond, what)                                                                         \
  do {                                                                                             \
    if (cond) {                                                                                    \
      ++passed;                                                                                    \
    } else {                                                                                       \
      printf("errors: FAILED: %s\n", what);                                                        \
      ++failed;                                                                                    \
    }                                                                                              \
  } while (0)

static int cmd_errors(const char* weights, int nfiles, char** files) {
  wm_model* m = open_model(weights);
  struct io io;
  int passed = 0, failed = 0, n;
  const void* in2[MAX_IO + 1];
  void* out2[MAX_IO + 1];
  if (!m || load_inputs(m, nfiles, files, &io)) return 1;
  /* a NULL handle */
  EXPECT(wm_model_num_inputs(NULL) == -1 && wm_model_num_outputs(NULL) == -1, "NULL counts");
  EXPECT(wm_model_input_name(NULL, 0) == NULL && wm_model_output_shape(NULL, 0) == NULL,
         "NULL handle queries");
  EXPECT(wm_model_run(NULL, (const void* const*)io.in, io.out) == 1, "run of a NULL handle");
  EXPECT(strstr(wm_model_last_error(NULL), "null handle") != NULL, "last_error of NULL");
  EXPECT(wm_model_set_threads(NULL, 2) == 1, "set_threads of NULL");
  wm_model_close(NULL);
  /* indices out of range */
  n = wm_model_num_inputs(m);
  EXPECT(wm_model_input_name(m, n) == NULL && wm_model_input_name(m, -1) == NULL,
         "input name out of range");
  EXPECT(wm_model_output_rank(m, wm_model_num_outputs(m)) == -1 &&
             wm_model_output_bytes(m, -1) == 0 && wm_model_input_dtype(m, n) == NULL,
         "output queries out of range");
  /* NULL arrays and tensors */
  EXPECT(wm_model_run(m, (const void* const*)io.in, NULL) == 1 &&
             strstr(wm_model_last_error(m), "outputs is NULL"),
         "NULL outputs");
  if (n > 0) {
    EXPECT(wm_model_run(m, NULL, io.out) == 1 && strstr(wm_model_last_error(m), "inputs is NULL"),
           "NULL inputs");
    memcpy(in2, io.in, sizeof(void*) * (size_t)n);
    in2[n - 1] = NULL;
    EXPECT(wm_model_run(m, in2, io.out) == 1 && strstr(wm_model_last_error(m), "is NULL") &&
               strstr(wm_model_last_error(m), wm_model_input_name(m, n - 1)),
           "a NULL input names the input");
  }
  memcpy(out2, io.out, sizeof(void*) * (size_t)io.nout);
  out2[0] = NULL;
  EXPECT(wm_model_run(m, (const void* const*)io.in, out2) == 1 &&
             strstr(wm_model_last_error(m), wm_model_output_name(m, 0)),
         "a NULL output names the output");
  /* wrong counts */
  EXPECT(wm_model_run_n(m, n + 1, (const void* const*)io.in, io.nout, io.out) == 1 &&
             strstr(wm_model_last_error(m), "got"),
         "one input too many");
  EXPECT(wm_model_run_n(m, n, (const void* const*)io.in, io.nout - 1, io.out) == 1,
         "one output too few");
  /* and the handle still works */
  EXPECT(run_once(m, &io) == 0, "a run after the errors");
  printf("errors: %d passed, %d failed\n", passed, failed);
  wm_model_close(m);
  free_io(&io);
  return failed != 0;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* Median of the first n values (sorted in place). */
static double median_of(double* v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#define MAX_SAMPLES 100000

static int cmd_bench(const char* weights, int threads, double seconds, int nfiles, char** files) {
  static double samples[MAX_SAMPLES];
  double opens[5], start;
  struct io io;
  wm_model* m = NULL;
  int i, n = 0, rc;
  for (i = 0; i < 5; ++i) {
    double t0 = now_seconds();
    if (m) wm_model_close(m);
    m = open_model(weights);
    if (!m) return 1;
    opens[i] = now_seconds() - t0;
  }
  wm_model_set_threads(m, threads);
  rc = load_inputs(m, nfiles, files, &io);
  for (i = 0; !rc && i < 3; ++i) rc = run_once(m, &io);
  start = now_seconds();
  while (!rc && n < MAX_SAMPLES && (n < 10 || now_seconds() - start < seconds)) {
    double t0 = now_seconds();
    rc = run_once(m, &io);
    samples[n++] = now_seconds() - t0;
  }
  if (!rc)
    printf("bench open_ms %.3f run_ms %.3f samples %d\n", 1e3 * median_of(opens, 5),
           1e3 * median_of(samples, n), n);
  free_io(&io);
  wm_model_close(m);
  return rc;
}

int main(int argc, char** argv) {
  wm_model* m;
  int rc;
  if (argc >= 4 && strcmp(argv[1], "compare") == 0) return cmd_compare(argv[2], argv[3]);
  if (argc >= 3 && strcmp(argv[1], "threads") == 0) return cmd_threads(argv[2], argc - 3, argv + 3);
  if (argc >= 3 && strcmp(argv[1], "errors") == 0) return cmd_errors(argv[2], argc - 3, argv + 3);
  if (argc >= 5 && strcmp(argv[1], "bench") == 0)
    return cmd_bench(argv[2], atoi(argv[3]), atof(argv[4]), argc - 5, argv + 5);
  if (argc < 3) {
    fprintf(stderr, "usage: model_test info|run|compare|threads|errors|open|bench ...\n");
    return 2;
  }
  m = open_model(argv[2]);
  if (!m) return 1;
  if (strcmp(argv[1], "info") == 0)
    rc = cmd_info(m);
  else if (strcmp(argv[1], "run") == 0 && argc >= 4)
    rc = cmd_run(m, argv[3], argc - 4, argv + 4);
  else
    rc = strcmp(argv[1], "open") != 0;
  wm_model_close(m);
  return rc;
}
