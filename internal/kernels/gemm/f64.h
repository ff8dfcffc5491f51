// float64 instructions for micro.h.
#define VFMA VFMADD231PD
#define VBCAST VBROADCASTSD
#define VADDV VADDPD
#define VMULV VMULPD
#define VMOVV VMOVUPD
