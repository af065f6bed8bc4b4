/* The device build only (WM_LLVM_STATIC): Debian's static LLVM libraries call arc4random, new in
   glibc 2.36; defined here (from getrandom, glibc 2.25) the binary also runs where the C
   library is older than the one it was built on. */
#include <stdint.h>
#include <sys/random.h>

uint32_t arc4random(void) {
  uint32_t v = 0;
  while (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) {
  }
  return v;
}
