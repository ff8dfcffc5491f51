// AVX2 registers for micro.h.
#define V0 Y0
#define V1 Y1
#define V2 Y2
#define V3 Y3
#define V4 Y4
#define V5 Y5
#define V6 Y6
#define V7 Y7
#define V8 Y8
#define V9 Y9
#define V10 Y10
#define V11 Y11
#define VB0 Y12
#define VB1 Y13
#define VA0 Y14
#define VA1 Y15
#define VW 32
