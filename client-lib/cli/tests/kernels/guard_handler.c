/* A SIGSEGV handler of the program's own, installed by a constructor before main, that makes a
 * guard page writable and lets the faulting write run again (a user-level pager's pattern).
 * With guard_main.f90 built -fno-backtrace, gfortran installs no handler of its own, and
 * epcache must leave this one alone (runtime_signals.rs). */
#define _GNU_SOURCE
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static char *page;

static void on_segv(int sig, siginfo_t *info, void *context) {
  (void)sig;
  (void)context;
  char *at = (char *)((unsigned long)info->si_addr & ~4095UL);
  if (info->si_code == SI_TKILL || at != page) {
    static const char message[] = "guard: unexpected SIGSEGV\n";
    write(2, message, sizeof message - 1);
    _exit(9);
  }
  mprotect(page, 4096, PROT_READ | PROT_WRITE);
}

__attribute__((constructor)) static void install(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_sigaction = on_segv;
  action.sa_flags = SA_SIGINFO;
  sigaction(SIGSEGV, &action, NULL);
  page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

void touch_guard(void) { page[10] = 1; }
