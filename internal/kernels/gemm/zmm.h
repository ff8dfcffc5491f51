// AVX-512 registers for micro.h.
#define V0 Z0
#define V1 Z1
#define V2 Z2
#define V3 Z3
#define V4 Z4
#define V5 Z5
#define V6 Z6
#define V7 Z7
#define V8 Z8
#define V9 Z9
#define V10 Z10
#define V11 Z11
#define VB0 Z12
#define VB1 Z13
#define VA0 Z14
#define VA1 Z15
#define VW 64
#define VZERO(r) VPXORD r, r, r
#define INTERLEAVE
#define W0 Z16
#define W1 Z17
#define W2 Z18
#define W3 Z19
#define W4 Z20
#define W5 Z21
#define W6 Z22
#define W7 Z23
#define W8 Z24
#define W9 Z25
#define W10 Z26
#define W11 Z27
