# The CUDA architectures gemmlab builds for, shared by the root build and the Python package's
# (include before the CUDA language is enabled). Default: the GPU in this machine (Hopper gets 90a,
# which wgmma and setmaxnreg need); with no GPU, a list covering Ampere, Ada and Hopper. Override
# with -DCMAKE_CUDA_ARCHITECTURES=... (scripts/test.sh builds 90a alone where there is no GPU).
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  execute_process(COMMAND nvidia-smi --query-gpu=compute_cap --format=csv,noheader
                  OUTPUT_VARIABLE _gemmlab_cc RESULT_VARIABLE _gemmlab_smi_rc ERROR_QUIET
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(_gemmlab_smi_rc EQUAL 0 AND _gemmlab_cc MATCHES "^([0-9]+)\\.([0-9]+)")
    set(_gemmlab_arch "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
    if(_gemmlab_arch STREQUAL "90")
      set(_gemmlab_arch "90a")
    endif()
  else()
    set(_gemmlab_arch "80;89;90a")
  endif()
  set(CMAKE_CUDA_ARCHITECTURES "${_gemmlab_arch}" CACHE STRING "CUDA architectures to build for")
endif()
