// The fuzz targets without libFuzzer: runs LLVMFuzzerTestOneInput on every file named on the
// command line (a directory: every file in it, in name order). CTest runs it on the checked-in
// corpora, so every build replays them; any finding aborts (a failing test).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path p(argv[i]);
    if (std::filesystem::is_directory(p)) {
      for (auto& e : std::filesystem::directory_iterator(p))
        if (e.is_regular_file()) files.push_back(e.path().string());
    } else {
      files.push_back(p.string());
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) {
    std::cerr << argv[0] << ": no inputs\n";
    return 2;
  }
  for (auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string s = ss.str();
    std::fprintf(stderr, "replay %s\n", f.c_str());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
  }
  std::cout << files.size() << " inputs replayed, no finding\n";
  return 0;
}
