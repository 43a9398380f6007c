/* Two globals that share a line (the linker puts Y's last doubles and X's first ones in one
 * 64-byte line: each is 8008 bytes with 8-byte alignment), swept together often enough that
 * the report's simulation is handed to the simulation thread. An access to the shared line
 * cannot own a repeat-hit entry (its line is not whole); the thread stages it as it stages the
 * rest, rather than taking its simulator back. Hand counts are in capture_pipeline.rs. */
#define N 1001
#define ROUNDS 400

__attribute__((aligned(8))) double X[N] = {1.0};
__attribute__((aligned(8))) double Y[N] = {2.0};

/* Walks both arrays from both ends, so the shared line is visited in the middle of a sweep,
 * read, written and read again between visits to other lines of its set. */
__attribute__((noinline)) void sweep(void) {
  for (int round = 0; round < ROUNDS; round++)
    for (int i = 0; i < N; i++) {
      X[i] += Y[N - 1 - i];
      Y[i] += 0.5;
    }
}

int main(void) {
  sweep();
  return X[0] > 0.0 ? 0 : 5;
}
