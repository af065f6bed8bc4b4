# System packages wmtune builds against (Debian 12). No sources are copied here; this file only
# finds the packages and checks their versions. scripts/setup.sh installs them.
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 2 REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
if(WM_BUILD_TESTS)
  find_package(Catch2 2 REQUIRED)
endif()
if(WM_WITH_TORCH)
  # Torch's config prepends its flags to CMAKE_CXX_FLAGS; keep them, they fix the ABI.
  find_package(Torch REQUIRED)
endif()
