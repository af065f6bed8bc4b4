// Hardware parameters of search tasks.
#include <wm/search/task.h>

#include <thread>

namespace wm::search {

HardwareParams HardwareParams::hostCpu() {
  HardwareParams h;
  unsigned n = std::thread::hardware_concurrency();
  h.numCores = n ? static_cast<int>(n) : 1;
  return h;
}

HardwareParams HardwareParams::gpuDefault() {
  HardwareParams h;
  h.numCores = 1;
  h.maxThreadsPerBlock = 1024;
  h.warpSize = 32;
  h.maxVthread = 8;
  return h;
}

} // namespace wm::search
