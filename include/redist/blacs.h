/* The BLACS and ScaLAPACK tool routines that redist's drop-ins, tests, benchmarks
 * and example programs call (docs/scalapack.md). ScaLAPACK ships no C header, so
 * they are declared once here, as Debian's libscalapack-openmpi defines them
 * (C interface of the BLACS; Fortran names with a trailing underscore, every
 * argument by reference). C99 and C++ alike. */
#ifndef REDIST_BLACS_H
#define REDIST_BLACS_H

#ifdef __cplusplus
extern "C" {
#endif

void Cblacs_pinfo(int* mypnum, int* nprocs);
void Cblacs_get(int context, int what, int* value);
void Cblacs_gridinit(int* context, const char* order, int rows, int cols);
void Cblacs_gridmap(int* context, int* usermap, int ldumap, int rows, int cols);
void Cblacs_gridinfo(int context, int* nprow, int* npcol, int* myrow, int* mycol);
void Cblacs_gridexit(int context);
void Cblacs_freebuff(int context, int wait);
void Cigsum2d(int context, const char* scope, const char* top, int m, int n, int* a, int lda, int rdest, int cdest);

int numroc_(const int* n, const int* nb, const int* iproc, const int* isrcproc, const int* nprocs);
void descinit_(int* desc, const int* m, const int* n, const int* mb, const int* nb, const int* irsrc,
               const int* icsrc, const int* context, const int* lld, int* info);

#ifdef __cplusplus
}
#endif

#endif /* REDIST_BLACS_H */
