/* The runtime of an exported model (`wmtune export model.onnx`; docs/export.md): the wm_model_*
 * C API over the kernels, the execution plan and the weights that the export puts beside it in
 * the library. Compiled once with wmtune (C99, position-independent, hidden symbols but the
 * API), embedded in wmtune as bytes and linked into every exported model.
 *
 * The plan (wm__model_plan, int64 words, written by lib/export/model_export.cpp) — every offset
 * is a word index into the plan, every "place" two words {where, byte offset} with where 0 the
 * handle's arena and 1 the weights:
 *   header   kPlanHeaderWords words: magic, format, inputs, outputs, groups, kernels, arena
 *            bytes, weights bytes, weights checksum, index checks, and where the tensors,
 *            groups, checks and strings start, the strings' bytes, the plan's words
 *   tensors  inputs then outputs, kTensorWords each: name (byte offset into the strings),
 *            dtype, rank, bytes, place (2 words), where its dimensions start
 *   groups   kGroupWords each: kernel, argument count, where its arguments' places start
 *   checks   kCheckWords each: after which group (-1: the inputs), place, element count, dtype,
 *            lo, hi, node name
 * A model runs: inputs copied into the arena, index checks of the inputs, every group's kernel
 * in order (with the checks of the values it computes), outputs copied out. */
#define _POSIX_C_SOURCE 200112L

#include "model_plan.h"

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WM_API __attribute__((visibility("default")))
#define WM_HIDDEN __attribute__((visibility("hidden")))

typedef void (*wm_kernel_fn)(void** args);

/* What the export generates beside this file. */
extern const int64_t wm__model_plan[] WM_HIDDEN;
extern const wm_kernel_fn wm__model_kernels[] WM_HIDDEN;
/* The embedded weights; NULL with --weights external. */
extern const unsigned char* const wm__model_weights_at WM_HIDDEN;

/* The parallel runtime (lib/rt, linked beside). */
void wm_set_caller_threads(int n);

struct wm_model {
  const int64_t* plan;
  unsigned char* arena;
  unsigned char* weightsOwned; /* read from a file; NULL when embedded */
  const unsigned char* weights;
  void*** groupArgs; /* per group: its arguments' addresses */
  void** argStorage;
  int threads;
  pthread_mutex_t mu;
  char error[512];
};
typedef struct wm_model wm_model;

static const char* const kDtypeNames[] = {"f32", "f16", "i32", "i64", "bool"};

static void say(char* buf, size_t len, const char* fmt, ...) {
  va_list ap;
  if (!buf || len == 0) return;
  va_start(ap, fmt);
  vsnprintf(buf, len, fmt, ap);
  va_end(ap);
}

/* FNV-1a, 64 bits (what the export writes into the plan and the weights file). */
static uint64_t checksum(const unsigned char* p, uint64_t n) {
  uint64_t h = 14695981039346656037ULL;
  uint64_t i;
  for (i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

static const int64_t* tensor(const int64_t* plan, int i) {
  return plan + plan[kTensorsAt] + (int64_t)i * kTensorWords;
}

static const char* planString(const int64_t* plan, int64_t offset) {
  return (const char*)(plan + plan[kStringsAt]) + offset;
}

/* Whether a place of `bytes` bytes lies inside the arena or the weights. */
static int placeFits(const int64_t* plan, const int64_t* place, int64_t bytes) {
  int64_t size = place[0] == 0 ? plan[kArenaBytes] : place[0] == 1 ? plan[kWeightsBytes] : -1;
  return size >= 0 && place[1] >= 0 && bytes >= 0 && place[1] <= size && bytes <= size - place[1];
}

/* The plan's own consistency (it is generated, but a damaged library must not crash). */
static int planValid(const int64_t* p, char* err, size_t errlen) {
  int64_t i, n = p[kPlanWords];
  if (p[kMagic] != WM_PLAN_MAGIC || p[kFormat] != WM_PLAN_FORMAT) {
    say(err, errlen, "wm_model_open: the library's plan is not format 1 of wmtune's model plan");
    return 0;
  }
  if (p[kTensorsAt] < kPlanHeaderWords ||
      p[kTensorsAt] + (p[kNumInputs] + p[kNumOutputs]) * kTensorWords > n ||
      p[kGroupsAt] + p[kNumGroups] * kGroupWords > n ||
      p[kChecksAt] + p[kNumChecks] * kCheckWords > n ||
      p[kStringsAt] * 8 + p[kStringsBytes] > n * 8)
    goto bad;
  for (i = 0; i < p[kNumInputs] + p[kNumOutputs]; ++i) {
    const int64_t* t = tensor(p, (int)i);
    if (t[0] < 0 || t[0] >= p[kStringsBytes] || t[1] < 0 || t[1] > 4 || t[2] < 0 ||
        t[6] + t[2] > n || !placeFits(p, t + 4, t[3]))
      goto bad;
  }
  for (i = 0; i < p[kNumGroups]; ++i) {
    const int64_t* g = p + p[kGroupsAt] + i * kGroupWords;
    int64_t a;
    if (g[0] < 0 || g[0] >= p[kNumKernels] || g[1] < 1 || g[2] + 2 * g[1] > n) goto bad;
    for (a = 0; a < g[1]; ++a)
      if (!placeFits(p, p + g[2] + 2 * a, 0)) goto bad;
  }
  for (i = 0; i < p[kNumChecks]; ++i) {
    const int64_t* c = p + p[kChecksAt] + i * kCheckWords;
    if (c[0] < -1 || c[0] >= p[kNumGroups] || (c[4] != 2 && c[4] != 3) ||
        !placeFits(p, c + 1, c[3] * (c[4] == 2 ? 4 : 8)) || c[7] < 0 || c[7] >= p[kStringsBytes])
      goto bad;
  }
  return 1;
bad:
  say(err, errlen, "wm_model_open: the library's plan is damaged");
  return 0;
}

static unsigned char* placeAddress(const wm_model* m, const int64_t* place) {
  return (place[0] == 0 ? m->arena : (unsigned char*)m->weights) + place[1];
}

/* Reads the weights file: a 64-byte header (magic, format, bytes, checksum) and the bytes. */
static int readWeights(wm_model* m, const char* path, char* err, size_t errlen) {
  unsigned char header[WM_WEIGHTS_HEADER];
  uint64_t fields[3], want = (uint64_t)m->plan[kWeightsBytes];
  void* p = NULL;
  FILE* f = fopen(path, "rb");
  if (!f) {
    say(err, errlen, "wm_model_open: %s: cannot open the weights file", path);
    return 0;
  }
  if (fread(header, 1, sizeof header, f) != sizeof header ||
      memcmp(header, WM_WEIGHTS_MAGIC, 8) != 0) {
    say(err, errlen, "wm_model_open: %s: not a wmtune weights file", path);
    goto fail;
  }
  memcpy(fields, header + 8, sizeof fields);
  if (fields[0] != WM_WEIGHTS_FORMAT || fields[1] != want ||
      fields[2] != (uint64_t)m->plan[kWeightsChecksum]) {
    say(err, errlen,
        "wm_model_open: %s: the weights of another export (%llu bytes, checksum %016llx; this "
        "library wants %llu bytes, checksum %016llx)",
        path, (unsigned long long)fields[1], (unsigned long long)fields[2],
        (unsigned long long)want, (unsigned long long)m->plan[kWeightsChecksum]);
    goto fail;
  }
  if (posix_memalign(&p, 64, want ? want : 64) != 0) {
    say(err, errlen, "wm_model_open: out of memory for %llu bytes of weights",
        (unsigned long long)want);
    goto fail;
  }
  m->weightsOwned = (unsigned char*)p;
  if (fread(m->weightsOwned, 1, want, f) != want || fgetc(f) != EOF) {
    say(err, errlen, "wm_model_open: %s: the file is not %llu bytes of weights long", path,
        (unsigned long long)want);
    goto fail;
  }
  if (checksum(m->weightsOwned, want) != (uint64_t)m->plan[kWeightsChecksum]) {
    say(err, errlen, "wm_model_open: %s: wrong checksum: the weights are damaged", path);
    goto fail;
  }
  fclose(f);
  m->weights = m->weightsOwned;
  return 1;
fail:
  fclose(f);
  return 0;
}

WM_API void wm_model_close(wm_model* m) {
  if (!m) return;
  pthread_mutex_destroy(&m->mu);
  free(m->arena);
  free(m->weightsOwned);
  free(m->groupArgs);
  free(m->argStorage);
  free(m);
}

WM_API wm_model* wm_model_open(const char* weights_path, char* err, size_t errlen) {
  const int64_t* p = wm__model_plan;
  wm_model* m;
  int64_t g, nargs = 0;
  void* arena = NULL;
  say(err, errlen, "%s", "");
  if (!planValid(p, err, errlen)) return NULL;
  m = (wm_model*)calloc(1, sizeof *m);
  if (!m) {
    say(err, errlen, "wm_model_open: out of memory");
    return NULL;
  }
  m->plan = p;
  pthread_mutex_init(&m->mu, NULL);
  if (p[kWeightsBytes] > 0 && !wm__model_weights_at && !weights_path) {
    say(err, errlen,
        "wm_model_open: the weights are not embedded in this library: give the path "
        "of its .weights file");
    goto fail;
  }
  if (wm__model_weights_at && weights_path) {
    say(err, errlen, "wm_model_open: the weights are embedded in this library: give NULL, not %s",
        weights_path);
    goto fail;
  }
  if (weights_path) {
    if (!readWeights(m, weights_path, err, errlen)) goto fail;
  } else {
    m->weights = wm__model_weights_at;
  }
  if (posix_memalign(&arena, 64, p[kArenaBytes] > 0 ? (size_t)p[kArenaBytes] : 64) != 0) {
    say(err, errlen, "wm_model_open: out of memory for %lld bytes of buffers",
        (long long)p[kArenaBytes]);
    goto fail;
  }
  m->arena = (unsigned char*)arena;
  for (g = 0; g < p[kNumGroups]; ++g) nargs += p[p[kGroupsAt] + g * kGroupWords + 1];
  m->groupArgs = (void***)calloc((size_t)p[kNumGroups] + 1, sizeof(void**));
  m->argStorage = (void**)calloc((size_t)nargs + 1, sizeof(void*));
  if (!m->groupArgs || !m->argStorage) {
    say(err, errlen, "wm_model_open: out of memory");
    goto fail;
  }
  nargs = 0;
  for (g = 0; g < p[kNumGroups]; ++g) {
    const int64_t* grp = p + p[kGroupsAt] + g * kGroupWords;
    int64_t a;
    m->groupArgs[g] = m->argStorage + nargs;
    for (a = 0; a < grp[1]; ++a) m->argStorage[nargs++] = placeAddress(m, p + grp[2] + 2 * a);
  }
  return m;
fail:
  wm_model_close(m);
  return NULL;
}

WM_API int wm_model_num_inputs(const wm_model* m) {
  return m ? (int)m->plan[kNumInputs] : -1;
}
WM_API int wm_model_num_outputs(const wm_model* m) {
  return m ? (int)m->plan[kNumOutputs] : -1;
}

/* Tensor i of the inputs (output=0) or outputs (output=1); NULL when there is none. */
static const int64_t* io(const wm_model* m, int output, int i) {
  if (!m || i < 0) return NULL;
  if (i >= m->plan[output ? kNumOutputs : kNumInputs]) return NULL;
  return tensor(m->plan, output ? (int)m->plan[kNumInputs] + i : i);
}

WM_API const char* wm_model_input_name(const wm_model* m, int i) {
  const int64_t* t = io(m, 0, i);
  return t ? planString(m->plan, t[0]) : NULL;
}
WM_API const char* wm_model_output_name(const wm_model* m, int i) {
  const int64_t* t = io(m, 1, i);
  return t ? planString(m->plan, t[0]) : NULL;
}
WM_API const char* wm_model_input_dtype(const wm_model* m, int i) {
  const int64_t* t = io(m, 0, i);
  return t ? kDtypeNames[t[1]] : NULL;
}
WM_API const char* wm_model_output_dtype(const wm_model* m, int i) {
  const int64_t* t = io(m, 1, i);
  return t ? kDtypeNames[t[1]] : NULL;
}
WM_API int wm_model_input_rank(const wm_model* m, int i) {
  const int64_t* t = io(m, 0, i);
  return t ? (int)t[2] : -1;
}
WM_API int wm_model_output_rank(const wm_model* m, int i) {
  const int64_t* t = io(m, 1, i);
  return t ? (int)t[2] : -1;
}
WM_API const int64_t* wm_model_input_shape(const wm_model* m, int i) {
  const int64_t* t = io(m, 0, i);
  return t ? m->plan + t[6] : NULL;
}
WM_API const int64_t* wm_model_output_shape(const wm_model* m, int i) {
  const int64_t* t = io(m, 1, i);
  return t ? m->plan + t[6] : NULL;
}
WM_API size_t wm_model_input_bytes(const wm_model* m, int i) {
  const int64_t* t = io(m, 0, i);
  return t ? (size_t)t[3] : 0;
}
WM_API size_t wm_model_output_bytes(const wm_model* m, int i) {
  const int64_t* t = io(m, 1, i);
  return t ? (size_t)t[3] : 0;
}

WM_API int wm_model_set_threads(wm_model* m, int n) {
  if (!m) return 1;
  pthread_mutex_lock(&m->mu);
  m->threads = n > 0 ? n : 0;
  pthread_mutex_unlock(&m->mu);
  return 0;
}

WM_API const char* wm_model_last_error(const wm_model* m) {
  return m ? m->error : "wm_model: null handle";
}

/* The index checks that run after group `after` (-1: after the inputs are copied in). */
static int checkIndices(wm_model* m, int64_t after) {
  const int64_t* p = m->plan;
  int64_t c, k;
  for (c = 0; c < p[kNumChecks]; ++c) {
    const int64_t* chk = p + p[kChecksAt] + c * kCheckWords;
    const unsigned char* at;
    if (chk[0] != after) continue;
    at = placeAddress(m, chk + 1);
    for (k = 0; k < chk[3]; ++k) {
      int64_t x =
          chk[4] == 2 ? ((const int32_t*)(const void*)at)[k] : ((const int64_t*)(const void*)at)[k];
      if (x < chk[5] || x > chk[6]) {
        say(m->error, sizeof m->error, "node %s: index %lld is out of range [%lld, %lld]",
            planString(p, chk[7]), (long long)x, (long long)chk[5], (long long)chk[6]);
        return 0;
      }
    }
  }
  return 1;
}

static int run(wm_model* m, const void* const* inputs, void* const* outputs) {
  const int64_t* p = m->plan;
  int64_t i, g;
  if (!inputs && p[kNumInputs] > 0) {
    say(m->error, sizeof m->error, "wm_model_run: inputs is NULL");
    return 1;
  }
  if (!outputs) {
    say(m->error, sizeof m->error, "wm_model_run: outputs is NULL");
    return 1;
  }
  for (i = 0; i < p[kNumInputs]; ++i)
    if (!inputs[i]) {
      say(m->error, sizeof m->error, "wm_model_run: input %lld (%s) is NULL", (long long)i,
          planString(p, tensor(p, (int)i)[0]));
      return 1;
    }
  for (i = 0; i < p[kNumOutputs]; ++i)
    if (!outputs[i]) {
      say(m->error, sizeof m->error, "wm_model_run: output %lld (%s) is NULL", (long long)i,
          planString(p, tensor(p, (int)(p[kNumInputs] + i))[0]));
      return 1;
    }
  for (i = 0; i < p[kNumInputs]; ++i) {
    const int64_t* t = tensor(p, (int)i);
    memcpy(placeAddress(m, t + 4), inputs[i], (size_t)t[3]);
  }
  if (!checkIndices(m, -1)) return 1;
  wm_set_caller_threads(m->threads);
  for (g = 0; g < p[kNumGroups]; ++g) {
    const int64_t* grp = p + p[kGroupsAt] + g * kGroupWords;
    wm__model_kernels[grp[0]](m->groupArgs[g]);
    if (p[kNumChecks] > 0 && !checkIndices(m, g)) {
      wm_set_caller_threads(0);
      return 1;
    }
  }
  wm_set_caller_threads(0);
  for (i = 0; i < p[kNumOutputs]; ++i) {
    const int64_t* t = tensor(p, (int)(p[kNumInputs] + i));
    memcpy(outputs[i], placeAddress(m, t + 4), (size_t)t[3]);
  }
  m->error[0] = '\0';
  return 0;
}

WM_API int wm_model_run(wm_model* m, const void* const* inputs, void* const* outputs) {
  int rc;
  if (!m) return 1;
  pthread_mutex_lock(&m->mu);
  rc = run(m, inputs, outputs);
  pthread_mutex_unlock(&m->mu);
  return rc;
}

WM_API int wm_model_run_n(wm_model* m, int num_inputs, const void* const* inputs, int num_outputs,
                          void* const* outputs) {
  int rc;
  if (!m) return 1;
  pthread_mutex_lock(&m->mu);
  if (num_inputs != m->plan[kNumInputs] || num_outputs != m->plan[kNumOutputs]) {
    say(m->error, sizeof m->error,
        "wm_model_run_n: the model has %lld input(s) and %lld output(s), got %d and %d",
        (long long)m->plan[kNumInputs], (long long)m->plan[kNumOutputs], num_inputs, num_outputs);
    rc = 1;
  } else {
    rc = run(m, inputs, outputs);
  }
  pthread_mutex_unlock(&m->mu);
  return rc;
}
