// attnkit's version: the npm package's (package.json "version"), which is
// also the CMake package's (find_package(attnkit 0.1)). CTest's
// version.header checks that this file says the same.
#ifndef ATTNKIT_VERSION_H_
#define ATTNKIT_VERSION_H_

#define ATTNKIT_VERSION_MAJOR 0
#define ATTNKIT_VERSION_MINOR 1
#define ATTNKIT_VERSION_PATCH 0
#define ATTNKIT_VERSION_STRING "0.1.0"
// One number for #if: MAJOR * 10000 + MINOR * 100 + PATCH.
#define ATTNKIT_VERSION \
  (ATTNKIT_VERSION_MAJOR * 10000 + ATTNKIT_VERSION_MINOR * 100 + ATTNKIT_VERSION_PATCH)

#endif  // ATTNKIT_VERSION_H_
