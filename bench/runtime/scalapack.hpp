// The few ScaLAPACK/BLACS entry points the Cholesky benchmark calls (Debian's
// libscalapack-openmpi), declared here since Debian ships no C header for them.
#pragma once

#include "redist/blacs.h"

extern "C" {
void pdpotrf_(const char* uplo, const int* n, double* a, const int* ia, const int* ja,
              const int* desc, int* info);
}
