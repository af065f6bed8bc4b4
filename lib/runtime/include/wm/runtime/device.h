// Where compiled programs run: a Device owns memory, copies to and from it, launches kernels and
// waits for them. The CPU device (here) is the process itself; a CUDA device (the driver
// loaded at run time) implements the same interface. ProgramRunner (program.h) and the graph
// executor only talk to a Device.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>

namespace wm::runtime {

/// A device error after which the device is unusable in this process (a CUDA kernel's illegal
/// address or launch failure poisons its context): the measurement worker answers for its
/// candidate with Ansor's runtime-device error and ends, and the tuner starts a fresh one.
class DeviceFault : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// A compiled kernel of a device (the kernel ABI of rt/abi.h on the CPU: one pointer per
/// buffer, inputs then outputs).
class Kernel {
public:
  virtual ~Kernel() = default;
  /// Runs once on the device's buffers (asynchronous where the device is).
  virtual void launch(void** args) = 0;
};

class Device {
public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  /// Device memory, aligned for every kernel; never null (UserError when it cannot be had).
  virtual void* alloc(int64_t bytes) = 0;
  virtual void free(void* p) = 0;
  virtual void copyToDevice(void* dst, const void* src, int64_t bytes) = 0;
  virtual void copyToHost(void* dst, const void* src, int64_t bytes) = 0;
  /// Waits until every launched kernel has finished.
  virtual void synchronize() = 0;
  /// Evicts the device's caches (a large write), for timing cold runs.
  virtual void flushCache() = 0;
  /// Pins the threads that run kernels to cores, or lets them float again (where the device
  /// has such threads).
  virtual void pinThreads(bool /*on*/) {}
  /// Seconds per call of `number` calls of launch(), waiting for them: by the device's own
  /// clock where it has one (CUDA events), else empty, and the caller times the calls on the
  /// wall clock.
  virtual std::function<double(const std::function<void()>& launch, int number)> clock() {
    return {};
  }
};

/// This process's CPU with `threads` threads for parallel loops.
std::unique_ptr<Device> makeCpuDevice(int threads);

/// Device memory freed with its device.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(Device& d, int64_t bytes) : dev_(&d), bytes_(bytes), ptr_(d.alloc(bytes)) {}
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer&& o) noexcept : dev_(o.dev_), bytes_(o.bytes_), ptr_(o.ptr_) {
    o.ptr_ = nullptr;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      dev_ = o.dev_;
      bytes_ = o.bytes_;
      ptr_ = o.ptr_;
      o.ptr_ = nullptr;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* data() const { return ptr_; }
  int64_t bytes() const { return bytes_; }

private:
  void reset() {
    if (ptr_) dev_->free(ptr_);
    ptr_ = nullptr;
  }
  Device* dev_ = nullptr;
  int64_t bytes_ = 0;
  void* ptr_ = nullptr;
};

} // namespace wm::runtime
