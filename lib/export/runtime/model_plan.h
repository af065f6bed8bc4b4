/* The layout of an exported model's plan (int64 words) and of its external weights file: one
 * definition for the writer (lib/export/model_export.cpp, which includes this inside its own
 * namespace) and the reader (model_runtime.c). The layout itself is described at the top of
 * model_runtime.c. C89-compatible: enums and macros only. */
#ifndef WM_EXPORT_MODEL_PLAN_H
#define WM_EXPORT_MODEL_PLAN_H

/* The plan's header words. */
enum {
  kMagic = 0,
  kFormat,
  kNumInputs,
  kNumOutputs,
  kNumGroups,
  kNumKernels,
  kArenaBytes,
  kWeightsBytes,
  kWeightsChecksum,
  kNumChecks,
  kTensorsAt,
  kGroupsAt,
  kChecksAt,
  kStringsAt,
  kStringsBytes,
  kPlanWords,
  kPlanHeaderWords
};
/* Words of one tensor, group and index check. */
enum { kTensorWords = 7, kGroupWords = 3, kCheckWords = 9 };

#define WM_PLAN_MAGIC 0x314c45444f4d4d57LL /* "WMMODEL1" */
#define WM_PLAN_FORMAT 1
/* The weights file: a 64-byte header (magic, then uint64 format, bytes, checksum), the bytes. */
#define WM_WEIGHTS_MAGIC "WMWEIGHT"
#define WM_WEIGHTS_FORMAT 1
#define WM_WEIGHTS_HEADER 64

#endif
