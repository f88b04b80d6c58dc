// helper_functions.h -- host-side comparison helpers shared by the samples.
#ifndef COMMON_HELPER_FUNCTIONS_H
#define COMMON_HELPER_FUNCTIONS_H

#include <math.h>
#include <stdio.h>

#include "helper_timer.h"

// Relative L2 error between a reference and a result; true when below epsilon.
inline bool compareL2fe(const float *reference, const float *data, unsigned int len, float epsilon)
{
    float error = 0, ref = 0;
    for (unsigned int i = 0; i < len; ++i) {
        float diff = reference[i] - data[i];
        error += diff * diff;
        ref += reference[i] * reference[i];
    }
    if (fabsf(ref) < 1e-7f) {
        fprintf(stderr, "compareL2fe: reference is all zero\n");
        return false;
    }
    return sqrtf(error / ref) < epsilon;
}

inline bool compareData(const unsigned int *reference, const unsigned int *data, unsigned int len)
{
    for (unsigned int i = 0; i < len; ++i)
        if (reference[i] != data[i]) {
            fprintf(stderr, "mismatch at %u: %u != %u\n", i, reference[i], data[i]);
            return false;
        }
    return true;
}

#endif
