/* A program that forks without exec: the child sweeps the array again and exits through
 * exit(), after the parent ("orphan": the parent has exited; "wait": the parent waits for the
 * child, says so on stdout, and runs on until its stdin closes). Only the parent may be
 * monitored: the report and the segment are its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 4096
double A[N];

__attribute__((noinline)) void sweep(void) {
  for (int i = 0; i < N; i++) A[i] += 1.0;
}

__attribute__((noinline)) double after_child(void) {
  double sum = 0.0;
  for (int i = 0; i < N; i++) sum += A[i];
  return sum;
}

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  int orphan = strcmp(argv[1], "orphan") == 0;
  sweep();
  fflush(stdout);
  pid_t parent = getpid();
  pid_t child = fork();
  if (child < 0) return 3;
  if (child == 0) {
    sweep();
    if (orphan)
      while (getppid() == parent) usleep(1000);
    exit(0);
  }
  if (!orphan) {
    int status = 0;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status)) return 4;
    printf("child exited\n");
    fflush(stdout);
    char buf[16];
    while (read(0, buf, sizeof buf) > 0) {
    }
  }
  printf("%g\n", after_child());
  return 0;
}
