#include <cstdio>
int main() { std::puts("caf-launch: not yet wired"); return 0; }
