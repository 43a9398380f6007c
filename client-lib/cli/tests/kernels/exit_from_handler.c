/* Ends by _exit from its own SIGALRM handler, the usual way a handler ends a program, while
 * the main loop sweeps an array and allocates: the signal lands anywhere, inside the runtime
 * or inside the C library's allocator too. The program must end with its status at once,
 * with its report or without it, never with an empty one. (The first argument is the timer's
 * delay in microseconds.) */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

double X[1 << 12];

static void on_alarm(int signal) {
  (void)signal;
  _exit(7);
}

int main(int argc, char **argv) {
  signal(SIGALRM, on_alarm);
  struct itimerval timer = {{0, 0}, {0, argc > 1 ? atoi(argv[1]) : 20000}};
  setitimer(ITIMER_REAL, &timer, 0);
  void *keep[64] = {0};
  for (unsigned k = 0;; k++) {
    for (int i = 0; i < (1 << 12); i++) X[i] += 1.0;
    for (int j = 0; j < 64; j++) {
      free(keep[j]);
      keep[j] = malloc(16 + ((k * 131 + j * 977) & 8191));
    }
  }
}
