/* Opens `libplugin.so` (built from `shared_lib.c` with capture) from the working directory
 * with dlopen and calls its kernel twice. */
#include <dlfcn.h>
#include <stdio.h>

int main(void) {
  void *plugin = dlopen("./libplugin.so", RTLD_NOW);
  if (!plugin) {
    printf("dlopen: %s\n", dlerror());
    return 1;
  }
  void (*sweep)(void) = (void (*)(void))dlsym(plugin, "lib_sweep");
  if (!sweep) return 2;
  sweep();
  sweep();
  printf("ok\n");
  return 0;
}
