# find_package(CUDAToolkit) that also works with CMake 3.25.0-3.25.1 and a toolkit without the
# old nvToolsExt library (CUDA 13 has only the header-only NVTX3): those CMake versions set a
# deprecation on CUDA::nvToolsExt without checking that the target exists, and the configure
# fails ("set_property could not find TARGET CUDA::nvToolsExt"), as on Debian 12's CMake. They
# set it only for a project that requires CMake 3.25 or later, so for this one call they are
# told 3.24. Later versions check the target; they get the plain call. The project and the
# installed package config (a static libhpcml's consumers) both use it.
macro(hpcml_find_cuda_toolkit)
  if(CMAKE_VERSION VERSION_LESS 3.25.2 AND CMAKE_MINIMUM_REQUIRED_VERSION VERSION_GREATER_EQUAL 3.25)
    set(_hpcml_minimum_required ${CMAKE_MINIMUM_REQUIRED_VERSION})
    set(CMAKE_MINIMUM_REQUIRED_VERSION 3.24)
    find_package(CUDAToolkit ${ARGN})
    set(CMAKE_MINIMUM_REQUIRED_VERSION ${_hpcml_minimum_required})
    unset(_hpcml_minimum_required)
  else()
    find_package(CUDAToolkit ${ARGN})
  endif()
endmacro()
