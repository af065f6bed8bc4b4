/* .npy files for the export tests' C programs (C99; the includer defines _POSIX_C_SOURCE
 * 200112L first, for posix_memalign): read an array with its element count, write one with a
 * shape. Only what the tests need: C order, little-endian '<f4', '<f2', '<i4', '<i8' and '|b1'. */
#ifndef WM_TEST_NPY_C_H
#define WM_TEST_NPY_C_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 64-byte aligned memory (C99 has no aligned_alloc: POSIX's posix_memalign); free() it. */
static inline void* alloc64(size_t bytes) {
  void* p = NULL;
  return posix_memalign(&p, 64, bytes ? bytes : 64) == 0 ? p : NULL;
}

/* The bytes of a .npy file's elements (64-byte aligned, free() them), their count in *count;
 * the array's type must be `descr` ('<f4', '<i8', ...; elem bytes each). NULL when the file
 * cannot be read or is not a C-order array of that type. */
static inline void* npy_read(const char* path, const char* descr, size_t elem, long* count) {
  FILE* f = fopen(path, "rb");
  unsigned char pre[10];
  char header[4096], want[16];
  long n = 1;
  unsigned hlen;
  unsigned char* data = NULL;
  const char* shape;
  size_t bytes;
  if (!f) return NULL;
  if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) != 0 || pre[6] != 1) goto fail;
  hlen = pre[8] | (unsigned)pre[9] << 8;
  if (hlen >= sizeof header || fread(header, 1, hlen, f) != hlen) goto fail;
  header[hlen] = '\0';
  snprintf(want, sizeof want, "'%s'", descr);
  if (!strstr(header, want) || !strstr(header, "'fortran_order': False")) goto fail;
  shape = strstr(header, "'shape': (");
  if (!shape) goto fail;
  for (shape += 10; *shape && *shape != ')'; ++shape)
    if (*shape >= '0' && *shape <= '9') {
      n *= strtol(shape, (char**)&shape, 10);
      --shape;
    }
  bytes = (size_t)n * elem;
  data = alloc64(bytes);
  if (!data || fread(data, 1, bytes, f) != bytes) goto fail;
  fclose(f);
  *count = n;
  return data;
fail:
  free(data);
  fclose(f);
  return NULL;
}

/* The elements of a float32 .npy file; see npy_read. */
static inline float* npy_read_f32(const char* path, long* count) {
  return npy_read(path, "<f4", sizeof(float), count);
}

/* Writes a .npy file of the type descr (elem bytes an element) and shape (rank dimensions);
 * 0 on success. */
static inline int npy_write(const char* path, const char* descr, size_t elem, const void* data,
                            int rank, const long* shape) {
  FILE* f = fopen(path, "wb");
  char header[256];
  int len, ok, d;
  long n = 1;
  if (!f) return 1;
  len =
      snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (d = 0; d < rank; ++d) {
    len += snprintf(header + len, sizeof header - (size_t)len, "%ld,", shape[d]);
    n *= shape[d];
  }
  len += snprintf(header + len, sizeof header - (size_t)len, "), }");
  while ((10 + len + 1) % 64 != 0) header[len++] = ' ';
  header[len++] = '\n';
  ok = fwrite("\x93NUMPY\x01\x00", 1, 8, f) == 8 && fputc(len & 0xff, f) != EOF &&
       fputc(len >> 8, f) != EOF && fwrite(header, 1, (size_t)len, f) == (size_t)len &&
       fwrite(data, elem, (size_t)n, f) == (size_t)n;
  return fclose(f) != 0 || !ok;
}

/* Writes a float32 .npy file; see npy_write. */
static inline int npy_write_f32(const char* path, const float* data, int rank, const long* shape) {
  return npy_write(path, "<f4", sizeof(float), data, rank, shape);
}

/* max |got - want| / max(1, |want|) over n elements; NaN counts as the worst. */
static inline double max_rel_error(const float* got, const float* want, long n) {
  double worst = 0;
  long i;
  for (i = 0; i < n; ++i) {
    double d = fabs((double)got[i] - (double)want[i]) / fmax(1.0, fabs((double)want[i]));
    if (!(d <= worst)) worst = d; /* NaN counts as the worst */
  }
  return worst;
}

#endif
