/* Sweeps an array until a signal ends it; with an argument, first blocks reading stdin, where no
   captured access happens. Says "ready" on stdout once the first sweep is done. */
#include <stdio.h>
#include <unistd.h>

double a[4096];

void sweep(void) {
  for (int i = 0; i < 4096; i++) a[i] += 1.0;
}

int main(int argc, char **argv) {
  sweep();
  printf("ready\n");
  fflush(stdout);
  if (argc > 1) {
    char c;
    /* Restarted after a handled signal (SA_RESTART): the program stays blocked here. */
    if (read(0, &c, 1) < 0) return 2;
  }
  for (;;) sweep();
}
