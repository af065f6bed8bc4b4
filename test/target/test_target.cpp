// Targets: the key stored in tuning-log records, the JSON sent to measurement workers, and
// which records count as this target's.
#include <wm/target/target.h>

#include <catch2/catch.hpp>

using namespace wm;

TEST_CASE("a target round-trips through JSON and names itself in its key", "[target]") {
  target::Target t = target::ansorCpuDefaults(4);
  t.cpu = "znver4";
  t.features = "+avx512f,+fma";
  t.ghz = 2.5;
  t.l2Bytes = 1 << 20;
  CHECK(t.key() == "llvm -mcpu=znver4 -num-cores=4");
  t.mattr = "+avx2";
  CHECK(t.key() == "llvm -mcpu=znver4 -mattr=+avx2 -num-cores=4");
  target::Target back;
  std::string err;
  REQUIRE(target::Target::fromJson(t.toJson(), &back, &err));
  CHECK(back.toJson() == t.toJson());
  CHECK(back.key() == t.key());
  CHECK(back.vectorBytes == t.vectorBytes);
  CHECK(back.gpu.warpSize == t.gpu.warpSize);

  target::Target g = target::gpuDefaults();
  CHECK(g.isGpu());
  CHECK(g.key() == "cuda -arch=sm_90");
  REQUIRE(target::Target::fromJson(g.toJson(), &back, &err));
  CHECK(back.isGpu());
  CHECK(back.gpu.maxThreadsPerBlock == 1024);

  CHECK_FALSE(target::Target::fromJson("{\"kind\":\"tpu\"}", &back, &err));
  CHECK_FALSE(target::Target::fromJson("not json", &back, &err));
}

TEST_CASE("records of another target are not this target's", "[target]") {
  target::Target a = target::ansorCpuDefaults(2), b = target::ansorCpuDefaults(1);
  CHECK(target::sameTarget(a.key(), a));
  CHECK_FALSE(target::sameTarget(b.key(), a));
  CHECK_FALSE(target::sameTarget(target::gpuDefaults().key(), a));
  CHECK(target::sameTarget("llvm", a)); // logs from before targets were recorded
  CHECK_FALSE(target::sameTarget("llvm", target::gpuDefaults()));
}

TEST_CASE("threads 0 means every hardware thread, decided in one place", "[target]") {
  target::CpuDescription cpu{"x86_64-unknown-linux-gnu", "generic", "", 32};
  target::TargetOptions o;
  CHECK(target::makeCpuTarget(cpu, o).cores == target::hardwareThreads());
  o.threads = 1;
  CHECK(target::makeCpuTarget(cpu, o).cores == 1);
  CHECK(target::makeCpuTarget(cpu, o).vectorBytes == 32);
}
