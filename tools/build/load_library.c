/* Loads shared libraries with dlopen(RTLD_NOW), as an import would: their dependencies, symbol versions
 * and static initializers, where no Python can run them (scripts/test_wheel_bullseye.sh builds it
 * against the Debian 11 sysroot and runs it on glibc 2.31). Exit 1 if any fails to load. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char** argv) {
  int status = 0;
  for (int i = 1; i < argc; ++i) {
    if (dlopen(argv[i], RTLD_NOW | RTLD_LOCAL)) {
      printf("loaded %s\n", argv[i]);
    } else {
      fprintf(stderr, "failed to load %s: %s\n", argv[i], dlerror());
      status = 1;
    }
  }
  return status;
}
