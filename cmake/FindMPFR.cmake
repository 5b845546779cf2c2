# Finds MPFR and GMP through pkg-config and provides the imported target MPFR::MPFR.
find_package(PkgConfig REQUIRED)
pkg_check_modules(GEMMLAB_MPFR QUIET IMPORTED_TARGET mpfr gmp)
include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(MPFR
  REQUIRED_VARS GEMMLAB_MPFR_FOUND
  VERSION_VAR GEMMLAB_MPFR_mpfr_VERSION
  FAIL_MESSAGE "MPFR and GMP development files not found: on Debian/Ubuntu run 'apt-get install libmpfr-dev libgmp-dev' (scripts/setup.sh does this)")
if(MPFR_FOUND AND NOT TARGET MPFR::MPFR)
  add_library(MPFR::MPFR INTERFACE IMPORTED)
  target_link_libraries(MPFR::MPFR INTERFACE PkgConfig::GEMMLAB_MPFR)
endif()
