# The default build (no CMAKE_CUDA_ARCHITECTURES given) promises machine code for every GPU
# generation from Turing to Hopper and PTX for newer ones. CI builds one architecture to save
# time, so this configures a scratch build of SOURCE_DIR in WORK_DIR with the defaults, compiles
# one CUDA object of libhpcml, and checks its images with kernel_image_check.cmake.
cmake_minimum_required(VERSION 3.25)
set(promised "75-real,80-real,86-real,89-real,90")  # README: sm_75, 80, 86, 89, 90 and compute_90
file(REMOVE_RECURSE "${WORK_DIR}")
# The library alone (no tests, benchmarks, tools or MPI to find), with this build's nvcc.
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR} -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release
                        -DCMAKE_CUDA_COMPILER=${CUDA_COMPILER} -DHPCML_BUILD_TESTS=OFF -DHPCML_BUILD_BENCHMARKS=OFF
                        -DHPCML_BUILD_TOOLS=OFF -DHPCML_INSTALL=OFF
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring a default build failed (${rc}):\n${out}\n${err}")
endif()
set(object kernels/CMakeFiles/hpcml.dir/similarity/mirror.cu.o)  # a Ninja target
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR} --target ${object} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compiling ${object} in the default build failed (${rc}):\n${out}\n${err}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} -DCUOBJDUMP=${CUOBJDUMP} -DLIBRARY=${WORK_DIR}/${object} -DARCHITECTURES=${promised}
                        -DMIN_OBJECTS=1 -P ${CMAKE_CURRENT_LIST_DIR}/kernel_image_check.cmake
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the default build does not hold the images it promises (${promised})")
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
