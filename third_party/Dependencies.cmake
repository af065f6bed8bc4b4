# System packages wmtune builds against (Debian 12). No sources are copied here; this file only
# finds the packages and checks their versions. scripts/setup.sh installs them.
find_package(fmt REQUIRED)
find_package(spdlog REQUIRED)
find_package(CLI11 2 REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
if(WM_BUILD_TESTS)
  find_package(Catch2 2 REQUIRED)
endif()
# WM_TORCH_ROOT: the torch/ folder of a PyTorch pip wheel, built against instead of Debian's
# libtorch (the device build, scripts/device_pack.sh: the GPU machine runs the same wheel). Only
# libtorch_cpu and libc10 are linked; their CUDA dependencies are the running machine's.
set(WM_TORCH_ROOT "" CACHE PATH "torch/ of a PyTorch wheel to build against (the device build)")
if(WM_WITH_TORCH AND WM_TORCH_ROOT)
  add_library(wm_torch_wheel INTERFACE)
  target_include_directories(wm_torch_wheel SYSTEM INTERFACE
    ${WM_TORCH_ROOT}/include ${WM_TORCH_ROOT}/include/torch/csrc/api/include)
  target_link_libraries(wm_torch_wheel INTERFACE
    ${WM_TORCH_ROOT}/lib/libtorch_cpu.so ${WM_TORCH_ROOT}/lib/libc10.so)
  target_link_options(wm_torch_wheel INTERFACE -Wl,--allow-shlib-undefined)
  set(TORCH_LIBRARIES wm_torch_wheel)
elseif(WM_WITH_TORCH)
  # Torch's config prepends its flags to CMAKE_CXX_FLAGS; keep them, they fix the ABI.
  find_package(Torch REQUIRED)
endif()

# XGBoost (libxgboost-dev). Debian's CMake package config references an executable the
# package does not ship (/usr/bin/xgboost), so find the library and header directly.
find_library(WM_XGBOOST_LIBRARY xgboost REQUIRED)
find_path(WM_XGBOOST_INCLUDE xgboost/c_api.h REQUIRED)
add_library(wm_xgboost INTERFACE)
target_link_libraries(wm_xgboost INTERFACE ${WM_XGBOOST_LIBRARY})
target_include_directories(wm_xgboost SYSTEM INTERFACE ${WM_XGBOOST_INCLUDE})

# ONNX (libonnx-dev) and the protobuf runtime it is built on. The node tests of the ONNX project
# (libonnx-testdata) are the frontend's conformance suite when installed.
find_package(Protobuf REQUIRED)
find_package(ONNX REQUIRED)
find_path(WM_ONNX_NODE_TESTS NAMES test_relu/model.onnx
          PATHS /usr/share/libonnx-testdata/data/node NO_DEFAULT_PATH)
