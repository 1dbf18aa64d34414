# uninstall.cmake: `make uninstall`: removes every file the last `make install` put in place, as
# CMake's install manifest lists them, under $DESTDIR when it is set (the manifest omits it).
# cmake -DMANIFEST=BUILD/install_manifest.txt -P scripts/uninstall.cmake
if(NOT DEFINED MANIFEST OR NOT EXISTS "${MANIFEST}")
  message(FATAL_ERROR "no install manifest at ${MANIFEST}: nothing was installed from this build")
endif()
file(STRINGS "${MANIFEST}" files)
foreach(f IN LISTS files)
  set(p "$ENV{DESTDIR}${f}")
  if(IS_SYMLINK "${p}" OR EXISTS "${p}")
    message(STATUS "Removing: ${p}")
    file(REMOVE "${p}")
    if(IS_SYMLINK "${p}" OR EXISTS "${p}")
      message(FATAL_ERROR "could not remove ${p}")
    endif()
  else()
    message(STATUS "Already gone: ${p}")
  endif()
endforeach()
