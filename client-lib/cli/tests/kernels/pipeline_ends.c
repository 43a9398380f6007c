/* A sweep whose visits the simulation thread simulates, then one of three endings a thread of the
 * runtime must not change. `sigwait`: the only program thread blocks SIGUSR1, sends it to the
 * process and waits for it (the simulation thread, started with the program's mask, took the
 * signal and the program died of it). `pthread_exit`: the main thread ends with pthread_exit,
 * and the process must end with it (the simulation thread waiting for work kept it alive).
 * `cleanup`: the same with a cleanup handler writing H as pthread_exit unwinds main (counted
 * for `main`, which had handed its counts on before the unwind and was then waited for).
 * `key`: the same with a thread-specific data key of the program's whose destructor writes H
 * and sets its value again twice: it ran after the runtime's and made new captures of the
 * ended thread, the last of which nothing handed on (reported as a thread still in a region,
 * after a 250 ms wait). */
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define N 512

double A[N][N], B[N][N], H[N];

static void write_h(void *arg) {
  (void)arg;
  for (int i = 0; i < N; i++) H[i] = i;
}

static pthread_key_t key;
static int rounds;

static void key_ended(void *value) {
  write_h(value);
  if (++rounds < 3) pthread_setspecific(key, &rounds);
}

__attribute__((noinline)) void sweep(void) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) A[i][j] += B[j][i];
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  sweep();
  if (strcmp(argv[1], "sigwait") == 0) {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    kill(getpid(), SIGUSR1);
    struct timespec limit = {10, 0};
    return sigtimedwait(&set, NULL, &limit) == SIGUSR1 ? 0 : 3;
  }
  if (strcmp(argv[1], "pthread_exit") == 0) pthread_exit(NULL);
  if (strcmp(argv[1], "key") == 0) {
    pthread_key_create(&key, key_ended);
    pthread_setspecific(key, &rounds);
    pthread_exit(NULL);
  }
  if (strcmp(argv[1], "cleanup") == 0) {
    pthread_cleanup_push(write_h, NULL);
    pthread_exit(NULL);
    pthread_cleanup_pop(0);
  }
  return 4;
}
