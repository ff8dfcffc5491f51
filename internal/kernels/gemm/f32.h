// float32 instructions for micro.h.
#define VFMA VFMADD231PS
#define VBCAST VBROADCASTSS
#define VADDV VADDPS
#define VMULV VMULPS
#define VMOVV VMOVUPS
