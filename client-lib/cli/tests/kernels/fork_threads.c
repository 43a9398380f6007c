/* Forks repeatedly while another thread allocates and frees heap blocks (which the runtime
 * names by allocation site, under its own locks) and writes an array. Each child allocates,
 * writes and frees a block of its own and exits; the parent prints how many children exited
 * normally. A child that inherited a lock some parent thread held at the fork would hang. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define FORKS 200
#define BLOCK 8192

static volatile int done;
double shared[1024];

static void *churn(void *arg) {
  (void)arg;
  while (!done) {
    double *p = malloc(BLOCK);
    for (int i = 0; i < BLOCK / 8; i += 64) p[i] = i;
    for (int i = 0; i < 1024; i++) shared[i] += 1.0;
    free(p);
  }
  return NULL;
}

int main(void) {
  pthread_t thread;
  if (pthread_create(&thread, NULL, churn, NULL) != 0) return 2;
  int exited = 0;
  for (int f = 0; f < FORKS; f++) {
    pid_t child = fork();
    if (child < 0) return 3;
    if (child == 0) {
      double *p = malloc(BLOCK);
      for (int i = 0; i < BLOCK / 8; i++) p[i] = i;
      free(p);
      for (int i = 0; i < 1024; i++) shared[i] += 2.0;
      _exit(0);
    }
    int status = 0;
    if (waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0)
      exited++;
  }
  done = 1;
  pthread_join(thread, NULL);
  printf("%d\n", exited);
  return 0;
}
