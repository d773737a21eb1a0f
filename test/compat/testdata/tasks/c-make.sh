# shellcheck shell=sh disable=SC2164,SC2016 # run as sh -eux TASK: a failed cd ends it; quoted $ is for the tool
# make + gcc: compile, link and run a two-file C program.
mkdir -p cproj
cd cproj
cat >main.c <<'C'
#include <stdio.h>
int add(int, int);
int main(void) { printf("%d\n", add(2, 3)); return add(2, 3) == 5 ? 0 : 1; }
C
cat >add.c <<'C'
int add(int a, int b) { return a + b; }
C
printf 'prog: main.o add.o\n\t$(CC) -o $@ main.o add.o\n%%.o: %%.c\n\t$(CC) -O2 -c -o $@ $<\n' >Makefile
make -s -j2
./prog
make -s -B prog
