// A forward declaration of a struct defined in params.h (one header declares, another defines).
struct Params;
__device__ float weight(const Params& p, int i);
