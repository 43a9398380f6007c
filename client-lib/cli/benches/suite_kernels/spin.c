/* The busy machine row's competitor: CPU-bound until killed. */
int main(void) {
  volatile unsigned long x = 0;
  for (;;) x++;
}
